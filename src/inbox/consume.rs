//! `cascade inbox consume`: the receiving end of an outbox's Kafka sink. A consumer group reads
//! the sink's topics (one record per message, its value the message as JSON); each batch of
//! records is taken into the inbox in one transaction, and only once that has committed are the
//! batch's offsets committed. A consumer that dies, a rebalance or a broker that goes away at
//! any moment leaves the batch's offsets uncommitted: its records are read again, by this
//! consumer or another of the group, and a message received before is not taken twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rdkafka::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message as _;
use rdkafka::{Offset, TopicPartitionList};
use serde::Serialize;
use tracing::{info, warn};

use super::{InboxError, Message, TombstoneIn, take};
use crate::db::{Database, Failure};
use crate::outbox::{KafkaLogger, kafka_log_level};

/// The properties the consumer sets itself: offsets are committed by hand, after the inbox's
/// transaction, and a new group starts at the oldest record (a later one would skip tombstones).
const OWNED_PROPERTIES: [&str; 5] =
    ["bootstrap.servers", "group.id", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset"];

/// How long a read waits for the first record of a batch before it looks at the stop flag (and,
/// with `once`, whether the consumer has caught up).
const READ_WAIT: Duration = Duration::from_millis(200);

/// How long asking a broker for a partition's end, or the group's committed offset, may take.
const WATERMARK_WAIT: Duration = Duration::from_secs(2);

/// How long a batch waits for more records once it has one.
const FILL_WAIT: Duration = Duration::from_millis(20);

/// How `inbox consume` reads.
#[derive(Clone)]
pub struct ConsumeOptions {
    /// The bootstrap brokers, `host:port` separated by commas.
    pub brokers: String,
    /// The topics the sender's Kafka sink writes.
    pub topics: Vec<String>,
    /// The consumer group: consumers of one group share the topics' partitions.
    pub group: String,
    /// The sending database, as this one names it.
    pub source: String,
    /// More librdkafka settings (`security.protocol`, `sasl.*`, ...), values already read.
    pub properties: Vec<(String, String)>,
    /// Records taken into the inbox per transaction, at most.
    pub batch: usize,
    /// Stop once every assigned partition is read to its end.
    pub once: bool,
}

/// Brokers, topics and group only: the properties may hold secrets.
impl std::fmt::Debug for ConsumeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumeOptions")
            .field("brokers", &self.brokers)
            .field("topics", &self.topics)
            .field("group", &self.group)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// What a consumer took in before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ConsumeReport {
    /// Batches taken (each one transaction, then one offset commit).
    pub batches: u64,
    /// Records in them.
    pub messages: u64,
    /// Those not received before.
    pub new: u64,
}

/// Why the consumer stopped.
#[derive(Debug, thiserror::Error)]
pub enum ConsumeError {
    /// The inbox failed.
    #[error(transparent)]
    Inbox(#[from] InboxError),
    /// Kafka refused the consumer's settings or subscription.
    #[error("Kafka: {0}")]
    Kafka(String),
    /// A record is not a message of an outbox's Kafka sink: nothing of its batch is taken, and
    /// its offset stays uncommitted for the consumer to read again once it is dealt with.
    #[error("the record at offset {offset} of {topic} partition {partition} is not an outbox message: {error}")]
    Record {
        /// Its topic.
        topic: String,
        /// Its partition.
        partition: i32,
        /// Its offset.
        offset: i64,
        /// Why it cannot be read.
        error: String,
    },
}

/// Reads the topics into the inbox until `stop` is set (or, with `once`, until caught up), then
/// returns what was taken. The inbox's tables are created first.
pub async fn consume(
    database: &Database,
    options: &ConsumeOptions,
    stop: Arc<AtomicBool>,
) -> Result<ConsumeReport, ConsumeError> {
    crate::db::migrate(database).await.map_err(InboxError::from)?;
    let consumer = subscribe(options)?;
    let mut report = ConsumeReport::default();
    while !stop.load(Ordering::SeqCst) {
        let batch = read_batch(&consumer, options.batch).await?;
        if batch.records.is_empty() {
            if options.once && caught_up(&consumer, &options.topics) {
                break;
            }
            continue;
        }
        let offsets = batch.next_offsets()?;
        let tombstones: Vec<TombstoneIn> = batch.records.into_iter().map(|(_, tombstone)| tombstone).collect();
        let Some(received) = take_until_committed(database, &options.source, &tombstones, &stop).await? else {
            break;
        };
        // A commit that fails (a rebalance took the partition, the broker is away) only means
        // the batch is read again, and taken as nothing new.
        if let Err(error) = consumer.commit(&offsets, CommitMode::Sync) {
            warn!(%error, "committing the consumer's offsets failed: the batch will be read again");
        }
        info!(source = %options.source, messages = received.messages, new = received.new, "batch taken");
        report.batches += 1;
        report.messages += received.messages;
        report.new += received.new;
    }
    Ok(report)
}

fn subscribe(options: &ConsumeOptions) -> Result<StreamConsumer<GroupMember>, ConsumeError> {
    let mut config = ClientConfig::new();
    for (name, value) in &options.properties {
        if !OWNED_PROPERTIES.contains(&name.as_str()) {
            config.set(name, value);
        }
    }
    config
        .set("bootstrap.servers", &options.brokers)
        .set("group.id", &options.group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set_log_level(kafka_log_level());
    let logger = KafkaLogger { sink: format!("inbox consumer {}", options.group) };
    let context = GroupMember { logger, assigned: AtomicBool::new(false) };
    let kafka = |error: rdkafka::error::KafkaError| ConsumeError::Kafka(crate::secret::redact(&error.to_string()));
    let consumer: StreamConsumer<GroupMember> = config.create_with_context(context).map_err(kafka)?;
    let topics: Vec<&str> = options.topics.iter().map(String::as_str).collect();
    consumer.subscribe(&topics).map_err(kafka)?;
    Ok(consumer)
}

/// Records read for one transaction: each with its place, in the order read.
struct Batch {
    records: Vec<((String, i32, i64), TombstoneIn)>,
}

impl Batch {
    /// The offsets to commit once the batch is taken: past the last record read of each
    /// partition.
    fn next_offsets(&self) -> Result<TopicPartitionList, ConsumeError> {
        let mut last: BTreeMap<(&str, i32), i64> = BTreeMap::new();
        for ((topic, partition, offset), _) in &self.records {
            let entry = last.entry((topic.as_str(), *partition)).or_insert(*offset);
            *entry = (*entry).max(*offset);
        }
        let mut list = TopicPartitionList::new();
        for ((topic, partition), offset) in last {
            list.add_partition_offset(topic, partition, Offset::Offset(offset + 1))
                .map_err(|error| ConsumeError::Kafka(error.to_string()))?;
        }
        Ok(list)
    }
}

/// Up to `size` records: waits [`READ_WAIT`] for the first, then takes what follows within
/// [`FILL_WAIT`] of each. A record that is not an outbox message is an error.
async fn read_batch(consumer: &StreamConsumer<GroupMember>, size: usize) -> Result<Batch, ConsumeError> {
    let mut batch = Batch { records: Vec::new() };
    let mut wait = READ_WAIT;
    while batch.records.len() < size {
        let record = match tokio::time::timeout(wait, consumer.recv()).await {
            Err(_) => break,
            Ok(Err(error)) => {
                // The client goes on by itself (it reconnects, rejoins the group): what was read
                // so far is taken, and the next read tries again.
                warn!(error = %crate::secret::redact(&error.to_string()), "reading from Kafka failed");
                break;
            }
            Ok(Ok(record)) => record,
        };
        let place = (record.topic().to_owned(), record.partition(), record.offset());
        let tombstone = read_record(record.payload(), batch.records.len() + 1).map_err(|error| {
            ConsumeError::Record { topic: place.0.clone(), partition: place.1, offset: place.2, error }
        })?;
        batch.records.push((place, tombstone));
        wait = FILL_WAIT;
    }
    Ok(batch)
}

/// The tombstone a record's value carries: one message of the Kafka sink, as JSON.
fn read_record(value: Option<&[u8]>, index: usize) -> Result<TombstoneIn, String> {
    let value = value.ok_or("it has no value")?;
    let message: Message = serde_json::from_slice(value).map_err(|error| error.to_string())?;
    message.tombstone(index).map_err(|error| error.to_string())
}

/// Takes `tombstones` into the inbox, waiting out transient database errors (the batch stays in
/// hand, its offsets uncommitted); `None` when stopped first.
async fn take_until_committed(
    database: &Database,
    source: &str,
    tombstones: &[TombstoneIn],
    stop: &AtomicBool,
) -> Result<Option<super::Received>, ConsumeError> {
    loop {
        match take(database, source, tombstones).await {
            Ok(received) => return Ok(Some(received)),
            Err(InboxError::Database(error)) if database.classify(&error) == Failure::Transient => {
                warn!(error = %crate::secret::redact(&error.to_string()), "taking a batch failed; trying again");
                crate::stop::pause(READ_WAIT, stop).await;
                if stop.load(Ordering::SeqCst) {
                    return Ok(None);
                }
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// The consumer's context: librdkafka's log lines through `tracing`, and whether the group's
/// latest rebalance has given it its assignment (possibly of no partition) rather than only
/// taken the last one away.
struct GroupMember {
    logger: KafkaLogger,
    assigned: AtomicBool,
}

impl ClientContext for GroupMember {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        self.logger.log(level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.logger.error(error, reason);
    }

    fn stats_raw(&self, statistics: &[u8]) {
        self.logger.stats_raw(statistics);
    }
}

impl ConsumerContext for GroupMember {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(partitions) => {
                self.assigned.store(true, Ordering::SeqCst);
                info!(partitions = partitions.count(), "partitions assigned");
            }
            // Until the group assigns again, no partition is known to be read to its end.
            Rebalance::Revoke(_) => self.assigned.store(false, Ordering::SeqCst),
            Rebalance::Error(_) => {}
        }
    }
}

/// Whether the consumer has read each of its partitions to its end: also when it has none because
/// the group's latest rebalance gave it none (more members than partitions) or because the
/// brokers know none of `topics` (nobody wrote them yet, so no group assigns them), but not while
/// a rebalance is under way.
fn caught_up(consumer: &StreamConsumer<GroupMember>, topics: &[String]) -> bool {
    let Ok(assignment) = consumer.assignment() else { return false };
    if assignment.count() == 0 {
        return consumer.context().assigned.load(Ordering::SeqCst) || all_unknown(consumer, topics);
    }
    let Ok(positions) = consumer.position() else { return false };
    positions.elements().iter().all(|element| {
        let Some(high) = high_watermark(consumer, element.topic(), element.partition()) else { return false };
        match element.offset() {
            Offset::Offset(position) => position >= high,
            // Nothing read yet: caught up only when the partition is empty (or was committed to
            // its end before, which the position would show once read).
            _ => committed_at_end(consumer, element.topic(), element.partition(), high),
        }
    })
}

/// Whether the brokers know none of `topics`, asked now (with no partition assigned, no fetch
/// holds the connection).
fn all_unknown(consumer: &StreamConsumer<GroupMember>, topics: &[String]) -> bool {
    topics.iter().all(|topic| {
        consumer.fetch_metadata(Some(topic), WATERMARK_WAIT).is_ok_and(|metadata| {
            metadata.topics().iter().all(|found| {
                found
                    .error()
                    .is_some_and(|error| RDKafkaErrorCode::from(error) == RDKafkaErrorCode::UnknownTopicOrPartition)
            })
        })
    })
}

/// The partition's end as the consumer's last fetch from it saw it; asked of its broker when the
/// consumer has not fetched from it yet. Asking the broker each time would wait behind the fetch
/// that holds its connection (up to `fetch.wait.max.ms`, 500 ms, per partition).
fn high_watermark(consumer: &StreamConsumer<GroupMember>, topic: &str, partition: i32) -> Option<i64> {
    fetched_high_watermark(consumer, topic, partition)
        .or_else(|| consumer.fetch_watermarks(topic, partition, WATERMARK_WAIT).ok().map(|(_, high)| high))
}

/// The high watermark of the consumer's last fetch response for the partition, if it had one.
fn fetched_high_watermark(consumer: &StreamConsumer<GroupMember>, topic: &str, partition: i32) -> Option<i64> {
    let topic = std::ffi::CString::new(topic).ok()?;
    let (mut low, mut high) = (-1_i64, -1_i64);
    // SAFETY: the client handle lives as long as `consumer`, borrowed for the call; librdkafka
    // reads the topic's name and writes the two offsets, nothing else (the safe API lacks it).
    let error = unsafe {
        rdkafka::bindings::rd_kafka_get_watermark_offsets(
            consumer.client().native_ptr(),
            topic.as_ptr(),
            partition,
            &mut low,
            &mut high,
        )
    };
    (error == rdkafka::bindings::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0).then_some(high)
}

/// Whether the group's committed offset of the partition is at `high`.
fn committed_at_end(consumer: &StreamConsumer<GroupMember>, topic: &str, partition: i32, high: i64) -> bool {
    if high == 0 {
        return true;
    }
    let mut list = TopicPartitionList::new();
    if list.add_partition(topic, partition).set_offset(Offset::Invalid).is_err() {
        return false;
    }
    consumer.committed_offsets(list, WATERMARK_WAIT).is_ok_and(|committed| {
        committed.elements().iter().all(|element| matches!(element.offset(), Offset::Offset(offset) if offset >= high))
    })
}
