//! librdkafka's mock cluster (a real Kafka-protocol broker on 127.0.0.1, run by librdkafka inside
//! the test process) and a consumer that reads a topic back.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::bindings;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseProducer, DefaultProducerContext, Producer};
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
use rdkafka::{Offset, TopicPartitionList};
use std::ffi::c_int;

use super::DEADLINE;

/// A mock Kafka cluster of `brokers` brokers (ids 1 to `brokers`), owned by a client made for
/// it (`test.mock.num.brokers`), through which the test reaches the mock's whole C API.
pub struct Cluster {
    owner: BaseProducer,
    pub bootstrap: String,
    brokers: i32,
}

impl Cluster {
    pub fn start(brokers: i32) -> Self {
        let owner: BaseProducer = ClientConfig::new()
            .set("test.mock.num.brokers", brokers.to_string())
            .create()
            .expect("a client with a mock Kafka cluster");
        let bootstrap = owner.client().mock_cluster().expect("the mock cluster").bootstrap_servers();
        let mock = unsafe { bindings::rd_kafka_handle_mock_cluster(owner.client().native_ptr()) };
        // SAFETY: `mock` is the cluster the owner client holds, alive as long as it. A consumer
        // group is formed at once instead of after the broker's default wait of 3 s for more
        // members.
        unsafe { bindings::rd_kafka_mock_group_initial_rebalance_delay_ms(mock, 0) };
        Self { owner, bootstrap, brokers }
    }

    /// The mock cluster, to inject errors or create topics.
    pub fn mock(&self) -> MockCluster<'_, DefaultProducerContext> {
        self.owner.client().mock_cluster().expect("the mock cluster")
    }

    /// Creates `topic` with `partitions` partitions.
    pub fn topic(&self, topic: &str, partitions: i32) {
        self.mock().create_topic(topic, partitions, 1).expect("create the topic");
    }

    /// Delays the acknowledgments of the next `requests` produce requests each broker handles by
    /// `delay`, and nothing else: the records are in the log, readable, while their producer
    /// waits.
    pub fn delay_acknowledgments(&self, delay: Duration, requests: usize) {
        let mock = unsafe { bindings::rd_kafka_handle_mock_cluster(self.owner.client().native_ptr()) };
        let milliseconds = c_int::try_from(delay.as_millis()).expect("a delay in milliseconds");
        for broker in 1..=self.brokers {
            for _ in 0..requests {
                // SAFETY: `mock` is the cluster the owner client holds (alive as long as `self`);
                // one (error, delay) pair follows the count of 1, as the C function reads them.
                let pushed = unsafe {
                    bindings::rd_kafka_mock_broker_push_request_error_rtts(
                        mock,
                        broker,
                        RDKafkaApiKey::Produce as i16,
                        1,
                        RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR,
                        milliseconds,
                    )
                };
                assert_eq!(pushed, RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR, "delay broker {broker}");
            }
        }
    }

    /// Takes every broker down (connections closed, new ones refused), or brings them back up.
    pub fn set_up(&self, up: bool) {
        let mock = self.mock();
        for broker in 1..=self.brokers {
            if up { mock.broker_up(broker) } else { mock.broker_down(broker) }.expect("set a broker's state");
        }
    }
}

/// The offsets `group` has committed on `topic`'s `partitions`, summed: how many records the
/// group counts as consumed.
pub fn committed(bootstrap: &str, group: &str, topic: &str, partitions: i32) -> i64 {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("a consumer");
    let mut list = TopicPartitionList::new();
    for partition in 0..partitions {
        list.add_partition(topic, partition).set_offset(Offset::Invalid).expect("a partition");
    }
    let committed = consumer.committed_offsets(list, Duration::from_secs(10)).expect("the committed offsets");
    committed.elements().iter().map(|element| element.offset().to_raw().unwrap_or(0).max(0)).sum()
}

/// One record read back from a topic.
#[derive(Debug, Clone)]
pub struct Record {
    pub key: String,
    pub headers: BTreeMap<String, Option<String>>,
    pub value: serde_json::Value,
    pub partition: i32,
    pub offset: i64,
}

/// Every record of `topic` now (each partition read up to its high watermark), in partition and
/// offset order.
pub fn records(bootstrap: &str, topic: &str) -> Vec<Record> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "cascade-test")
        .set("enable.auto.commit", "false")
        .create()
        .expect("a consumer");
    let timeout = Duration::from_secs(10);
    let metadata = consumer.fetch_metadata(Some(topic), timeout).expect("the topic's metadata");
    let mut ends = BTreeMap::new();
    let mut assignment = TopicPartitionList::new();
    for partition in metadata.topics().iter().flat_map(|t| t.partitions()) {
        let (low, high) = consumer.fetch_watermarks(topic, partition.id(), timeout).expect("watermarks");
        if high > low {
            ends.insert(partition.id(), high);
            assignment.add_partition_offset(topic, partition.id(), Offset::Beginning).expect("assign");
        }
    }
    consumer.assign(&assignment).expect("assign the partitions");
    let mut read: BTreeMap<i32, Vec<Record>> = BTreeMap::new();
    let started = Instant::now();
    let done = |read: &BTreeMap<i32, Vec<Record>>| {
        ends.iter()
            .all(|(partition, end)| read.get(partition).and_then(|r| r.last()).is_some_and(|r| r.offset + 1 >= *end))
    };
    while !done(&read) {
        assert!(started.elapsed() < DEADLINE, "timed out reading {topic} back");
        let Some(message) = consumer.poll(Duration::from_millis(100)) else { continue };
        let message = message.expect("a record");
        let text = |bytes: Option<&[u8]>| bytes.map(|b| String::from_utf8(b.to_vec()).expect("UTF-8"));
        let headers = message
            .headers()
            .map(|headers| headers.iter().map(|h| (h.key.to_owned(), text(h.value))).collect())
            .unwrap_or_default();
        read.entry(message.partition()).or_default().push(Record {
            key: text(message.key()).expect("a key"),
            headers,
            value: serde_json::from_slice(message.payload().expect("a value")).expect("a JSON value"),
            partition: message.partition(),
            offset: message.offset(),
        });
    }
    read.into_values().flatten().collect()
}

/// The records of `topic` once it holds at least `count`.
pub fn wait_for_records(bootstrap: &str, topic: &str, count: usize) -> Vec<Record> {
    let started = Instant::now();
    loop {
        let records = records(bootstrap, topic);
        if records.len() >= count {
            return records;
        }
        assert!(started.elapsed() < DEADLINE, "timed out waiting for {count} records in {topic}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
