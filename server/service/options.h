#ifndef GRAPHSTORE_SERVER_SERVICE_OPTIONS_H_
#define GRAPHSTORE_SERVER_SERVICE_OPTIONS_H_

// Limits and defaults of the service core. Every size a request can ask for is bounded here,
// once: the config layer (server/service/config.h) checks requests against these values and
// hands the samplers and the scheduler options already within them.

#include <cstddef>
#include <cstdint>


namespace graphstore {

/// Bounds on the samplers' requests, checked where a request enters the service (config.cc,
/// queries.cc); the samplers trust their options.
struct SamplingLimits {
  /// Most hops.
  int max_hops = 8;
  /// Largest fanout at any hop (-1, "all", is always allowed); also the most nodes PPR keeps
  /// per seed.
  int max_fanout = 100000;
};

/// Limits and defaults of the service. main.cc binds flags into some of them.
struct CoreOptions {
  /// Worker threads of a backend whose request leaves num_workers at 0.
  int default_num_workers = 2;
  /// Most worker threads one backend may ask for.
  int max_num_workers = 64;
  /// Batches of one channel sampled at once, unless the backend asks otherwise.
  int default_max_in_flight = 2;
  /// Most batches of one channel a backend may ask to sample at once.
  int max_in_flight_per_channel = 64;
  /// Output buffer of a channel in messages / bytes, unless the request asks otherwise.
  int default_buffer_messages = 8;
  int64_t default_buffer_bytes = 256LL << 20;
  /// Batches of each channel's next epoch sampled ahead while workers are otherwise idle, so
  /// that StartEpoch finds its first batches ready (see BackendOptions::speculative_batches).
  int sample_ahead_batches = 2;
  /// Added to the nice value of every sampling worker thread (0..19): when cores are short,
  /// sending batches already sampled, answering RPCs and health probes go first, and the
  /// workers take the rest. 0 keeps them at the daemon's priority.
  int sampling_nice = 10;
  /// Largest output buffer a request may ask for, in messages / bytes.
  int max_buffer_messages = 1024;
  int64_t max_buffer_bytes = 4LL << 30;
  /// Largest batch_size.
  int max_batch_size = 1 << 20;
  /// Most hops and largest fanout (-1, "all", is always allowed).
  SamplingLimits sampling;
  /// Most generated negatives per anchor of a link-prediction input.
  int max_negatives = 1000;
  /// Most ids in one request (seeds, features, labels, lookups).
  int64_t max_ids_per_request = 50000000;
  /// Largest unary response, in bytes (the server sets it to --max_message_mb). Every response
  /// is bounded before it is built: a request whose answer could exceed this is refused with
  /// RESOURCE_EXHAUSTED, never built and then dropped.
  int64_t max_response_bytes = 512LL << 20;
  /// Server-wide: bytes of sampled batches not yet read, over every channel (0: a quarter of
  /// the host's memory), and worker threads of all backends together (0: 16 per core, at
  /// least 64). Past the first, channels sample only within their fair share, sampling ahead
  /// stops, and new channels are refused with RESOURCE_EXHAUSTED; past the second, new
  /// backends are, and a backend's first channel (which starts its workers). Backends without
  /// channels hold no threads.
  int64_t max_buffered_bytes_total = 0;
  int max_worker_threads = 0;
  /// Shared memory: bytes of a channel's files sent and not yet freed by its client, before its
  /// stream pauses; the same over all channels (0: half the shared-memory filesystem), past
  /// which channels above their fair share pause; and how long a paused stream waits for the
  /// client to free something before it ends with RESOURCE_EXHAUSTED.
  int64_t max_unfreed_shared_bytes_per_channel = int64_t{4} << 30;
  int64_t max_unfreed_shared_bytes_total = 0;
  int64_t shared_release_timeout_ms = 60000;
  /// Most live channels and backends.
  int max_channels = 100000;
  int max_backends = 1024;
  /// Quotas of one authenticated identity (a server without authentication has one anonymous
  /// caller, bound only by the limits above): live channels, backends it created, and the
  /// buffer limits of its channels summed, in bytes. 0 means no quota.
  int max_channels_per_identity = 1024;
  int max_backends_per_identity = 16;
  int64_t max_buffer_bytes_per_identity = 64LL << 30;
  /// Longest backend_key / worker_key, in bytes.
  size_t max_key_length = 256;
  /// Lease of a channel whose request leaves lease_ms at 0, and the longest allowed, in ms.
  int64_t default_lease_ms = 10 * 60 * 1000;
  int64_t max_lease_ms = 7 * 24 * 3600 * 1000LL;
  /// Lease of a backend without channels whose request leaves lease_ms at 0, in ms.
  int64_t default_backend_lease_ms = 10 * 60 * 1000;
  /// How often the lease watchdog looks for expired channels, in ms.
  int64_t lease_check_interval_ms = 1000;
  /// Interval of the periodic scheduler-state log line, in seconds; 0 turns it off.
  int64_t state_log_interval_s = 30;
  /// A batch larger than `stream_split_bytes` is streamed in parts of about
  /// `stream_part_bytes` (SampledMessage.part), so the client decodes one while the next is on
  /// the wire; a smaller batch goes as one message (splitting it would only add per-message
  /// work). 0 for either: every batch in one message.
  size_t stream_split_bytes = 8 << 20;
  size_t stream_part_bytes = 1 << 20;
  /// In a cluster: bytes of other partitions' node data and neighbour lists kept once fetched
  /// (0: none).
  int64_t peer_cache_bytes = 512LL << 20;
  /// Whether that cache also keeps neighbour lists, so that uniform draws of other partitions'
  /// nodes are made here instead of by their owners (see DrawNeighbors).
  bool peer_cache_lists = true;
  /// Degree negatives: a label edge type's destination degree sums are kept whole where they
  /// fit in this at two bytes a node (no peer is asked), else only this server's range of them
  /// (DegreeIndex::Ranges).
  int64_t whole_degree_index_bytes = 64LL << 20;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_OPTIONS_H_
