// Copies between the host and a device, counted. A training step whose
// arrays all live on the device makes none but the ones it asks for (the
// loss read back, the loss scaler's overflow flag); a function that runs on
// the host between device functions shows up here as two copies per call.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mg {

/// What was copied between the host and any device since the program
/// started or the last reset_transfer_stats(): SyncedArray's copies and the
/// ones backends report with count_transfer_to_*(). A copy between two
/// devices goes through the host and counts once each way.
struct TransferStats {
  uint64_t to_device = 0;  // host -> device copies
  uint64_t to_host = 0;    // device -> host copies
  uint64_t bytes_to_device = 0, bytes_to_host = 0;
};

TransferStats transfer_stats();
void reset_transfer_stats();

/// Adds one copy of `bytes` to the counters, for a backend that copies
/// between the host and a device without SyncedArray (the loss scaler's
/// read of its overflow flag).
void count_transfer_to_device(size_t bytes);
void count_transfer_to_host(size_t bytes);

}  // namespace mg
