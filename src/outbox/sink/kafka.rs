//! A Kafka sink: one record per message, on the topic the sink's template names for the message's
//! scope and category. The key is the object identifier (so one object's events stay in order on
//! one partition), the value the message as JSON, and the headers `idempotency_key`, `category`,
//! `scope` and `shard_identifier` (a null value for a NULL shard). The producer is idempotent and
//! waits for every in-sync replica (`enable.idempotence`, `acks=all`): a batch is delivered only
//! when the brokers acknowledged every one of its records; the first refusal or timeout fails
//! the whole delivery, so the shard backs off and none of its rows go.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rdkafka::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer};
use tracing::level_filters::LevelFilter;

use super::{DeliveryError, Message, ReadSetting};
use crate::config::{KAFKA_SINK_PROPERTIES, Kafka, SettingKind};

/// How much longer than the sink's timeout (librdkafka's `message.timeout.ms`, after which it
/// fails a record itself) a delivery waits for the last acknowledgment.
const ACKNOWLEDGMENT_GRACE: Duration = Duration::from_secs(5);

/// How long the producer waits for more records before it sends what it has, unless the sink's
/// properties say otherwise.
const LINGER_MS: &str = "1";

/// How long a delivery waits before it tries again to enqueue a record into a producer queue
/// that other deliveries filled.
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(5);

pub(super) struct KafkaSink {
    kafka: Kafka,
    /// The producer's settings: kept to make a new producer after a fatal error.
    config: ClientConfig,
    context: Logger,
    producer: Mutex<Arc<FutureProducer<Logger>>>,
    timeout: Duration,
}

/// Brokers and topic only: the settings may hold secrets.
impl std::fmt::Debug for KafkaSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSink")
            .field("brokers", &self.kafka.brokers.value)
            .field("topic", &self.kafka.topic())
            .finish_non_exhaustive()
    }
}

impl KafkaSink {
    /// A producer with the sink's properties (their `env:` values read), then the settings the
    /// sink decides itself: its brokers, idempotence, `acks=all`, its timeout per record.
    pub(super) fn new(
        sink: &str,
        kafka: &Kafka,
        settings: &[ReadSetting<'_>],
        timeout: Duration,
    ) -> Result<Self, String> {
        let mut config = ClientConfig::new();
        // A delivery enqueues its whole batch at once and then waits for every acknowledgment:
        // lingering (librdkafka's default is 5 ms) would only delay each batch, so the records
        // go as soon as the batch is queued. A `linger.ms` property overrides this.
        config.set("linger.ms", LINGER_MS);
        let owned = |name: &str| KAFKA_SINK_PROPERTIES.iter().any(|(owned, _)| *owned == name);
        for read in settings.iter().filter(|read| read.setting.kind == SettingKind::Property) {
            if !owned(read.setting.name) {
                config.set(read.setting.name, &read.value);
            }
        }
        config
            .set("bootstrap.servers", &kafka.brokers.value)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("message.timeout.ms", timeout.as_millis().max(1).to_string())
            .set_log_level(log_level());
        let context = Logger { sink: sink.to_owned() };
        let producer = create(&config, &context)?;
        Ok(Self { kafka: kafka.clone(), config, context, producer: Mutex::new(Arc::new(producer)), timeout })
    }

    /// Sends every message and waits until the brokers acknowledged each, or one failed.
    pub(super) async fn deliver(&self, messages: &[Message]) -> Result<(), DeliveryError> {
        let producer = self.producer.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let delivered = self.send_all(&producer, messages).await;
        if delivered.is_err() {
            self.replace(&producer);
        }
        // The last holder of a replaced producer closes it: that purges and flushes for up to
        // half a second, which must not hold up the runtime's threads.
        if let Some(replaced) = Arc::into_inner(producer) {
            tokio::task::spawn_blocking(move || drop(replaced));
        }
        delivered
    }

    /// Puts a new producer in place of `failed` (unless another delivery did already). A
    /// producer that failed may refuse every later record for minutes: an idempotent producer
    /// after a fatal error (a broken sequence, a fenced producer) for good, and any producer
    /// after a topic error (an authorization refused) until its next metadata refresh. Failures
    /// back their shard off, so this happens at most once per failing pass.
    fn replace(&self, failed: &Arc<FutureProducer<Logger>>) {
        let mut current = self.producer.lock().unwrap_or_else(PoisonError::into_inner);
        if !Arc::ptr_eq(&current, failed) {
            return;
        }
        if let Some((code, reason)) = failed.client().fatal_error() {
            let reason = crate::secret::redact(&reason);
            tracing::warn!(sink = %self.context.sink, ?code, %reason, "the Kafka producer failed fatally");
        }
        match create(&self.config, &self.context) {
            Ok(fresh) => *current = Arc::new(fresh),
            Err(error) => tracing::warn!(sink = %self.context.sink, %error, "could not make a new Kafka producer"),
        }
    }

    async fn send_all(&self, producer: &FutureProducer<Logger>, messages: &[Message]) -> Result<(), DeliveryError> {
        let deadline = tokio::time::Instant::now() + self.timeout + ACKNOWLEDGMENT_GRACE;
        // Records in flight name their topic by its index here: a batch's messages share one or a
        // few categories, so each topic is made once per delivery.
        let mut topics: Vec<(&str, String)> = Vec::new();
        let mut in_flight: VecDeque<(usize, DeliveryFuture)> = VecDeque::with_capacity(messages.len());
        let mut value = Vec::new();
        let mut failure = None;
        'messages: for message in messages {
            value.clear();
            serde_json::to_writer(&mut value, message).map_err(|error| DeliveryError(error.to_string()))?;
            let topic = match topics.iter().position(|(category, _)| *category == message.category) {
                Some(index) => index,
                None => {
                    topics.push((&message.category, self.kafka.topic_for(&message.scope, &message.category)));
                    topics.len() - 1
                }
            };
            let mut record = FutureRecord::to(&topics[topic].1)
                .key(message.object_identifier.as_str())
                .payload(&value)
                .headers(headers(message));
            loop {
                match producer.send_result(record) {
                    Ok(delivery) => {
                        in_flight.push_back((topic, delivery));
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                        record = returned;
                        // The producer's queue is full: wait for the oldest record in flight
                        // (or, with none of this delivery's, for other deliveries' records).
                        match in_flight.pop_front() {
                            Some((topic, delivery)) => {
                                failure = failure.or(settle(&topics[topic].1, delivery, deadline).await);
                            }
                            None if tokio::time::Instant::now() < deadline => {
                                tokio::time::sleep(QUEUE_FULL_PAUSE).await;
                            }
                            None => failure = Some("timed out waiting for room in the producer's queue".to_owned()),
                        }
                        if failure.is_some() {
                            break 'messages;
                        }
                    }
                    Err((error, _)) => {
                        failure = Some(format!("could not send to topic `{}`: {error}", topics[topic].1));
                        break 'messages;
                    }
                }
            }
        }
        // Every record sent is waited for, so none of this batch is still in flight when the
        // shard is retried.
        while let Some((topic, delivery)) = in_flight.pop_front() {
            let settled = settle(&topics[topic].1, delivery, deadline).await;
            failure = failure.or(settled);
        }
        failure.map_or(Ok(()), |failure| Err(DeliveryError(failure)))
    }
}

/// Why one record was not acknowledged, if it was not.
async fn settle(topic: &str, delivery: DeliveryFuture, deadline: tokio::time::Instant) -> Option<String> {
    match tokio::time::timeout_at(deadline, delivery).await {
        Ok(Ok(Ok(_))) => None,
        Ok(Ok(Err((error, _)))) => Some(format!("topic `{topic}` did not acknowledge a record: {error}")),
        Ok(Err(_)) => Some("the Kafka producer stopped before the brokers acknowledged".to_owned()),
        Err(_) => Some(format!("timed out waiting for topic `{topic}` to acknowledge")),
    }
}

fn headers(message: &Message) -> OwnedHeaders {
    OwnedHeaders::new_with_capacity(4)
        .insert(Header { key: "idempotency_key", value: Some(message.idempotency_key.as_str()) })
        .insert(Header { key: "category", value: Some(message.category.as_str()) })
        .insert(Header { key: "scope", value: Some(message.scope.as_str()) })
        .insert(Header { key: "shard_identifier", value: message.shard_identifier.as_deref() })
}

fn create(config: &ClientConfig, context: &Logger) -> Result<FutureProducer<Logger>, String> {
    config.create_with_context(context.clone()).map_err(|error| crate::secret::redact(&error.to_string()))
}

/// librdkafka logs what the process's own log level lets through.
pub(crate) fn log_level() -> RDKafkaLogLevel {
    match LevelFilter::current() {
        LevelFilter::TRACE | LevelFilter::DEBUG => RDKafkaLogLevel::Debug,
        LevelFilter::INFO => RDKafkaLogLevel::Info,
        LevelFilter::WARN => RDKafkaLogLevel::Warning,
        _ => RDKafkaLogLevel::Error,
    }
}

/// librdkafka's log lines and errors, through `tracing`, with every secret cut out; `sink` names
/// the client (a sink, or the inbox's consumer).
#[derive(Clone)]
pub(crate) struct Logger {
    pub(crate) sink: String,
}

impl rdkafka::consumer::ConsumerContext for Logger {}

impl ClientContext for Logger {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        let (sink, message) = (&self.sink, crate::secret::redact(message));
        match level {
            RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical | RDKafkaLogLevel::Error => {
                tracing::error!(sink, facility, "librdkafka: {message}");
            }
            RDKafkaLogLevel::Warning => tracing::warn!(sink, facility, "librdkafka: {message}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => tracing::info!(sink, facility, "librdkafka: {message}"),
            RDKafkaLogLevel::Debug => tracing::debug!(sink, facility, "librdkafka: {message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let error = crate::secret::redact(&format!("{error}: {reason}"));
        tracing::warn!(sink = %self.sink, %error, "Kafka client error");
    }

    /// Statistics are not asked for; if a property asks, they are dropped rather than logged.
    fn stats_raw(&self, _statistics: &[u8]) {}
}
