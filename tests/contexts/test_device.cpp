// SyncedArray on a device other than the host, through a backend made of
// host memory ("fake", tests/support/fake_device.hpp): the paths the CUDA
// backend takes (copies, conversions on the device, deferred fills), and the
// errors for devices that are not there.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/synced_array.hpp>
#include <mixgraph/contexts/transfers.hpp>

#include "../support/fake_device.hpp"

namespace mg {
namespace {

using test::FakeDevice;

FakeDevice& fake() {
  FakeDevice& f = FakeDevice::instance();
  f.devices = 2;
  f.reset_counters();
  return f;
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(Device, HostToDeviceConvertsOnTheDevice) {
  FakeDevice& f = fake();
  SyncedArray a(1000);
  float* w = static_cast<float*>(a.cast(Dtype::f32));
  for (int i = 0; i < 1000; ++i) w[i] = 0.5f * i;
  const Half* h = static_cast<const Half*>(a.get(Dtype::f16, "fake:0"));
  // The float data travels as float and is converted there.
  EXPECT_EQ(f.to_device, 1);
  EXPECT_EQ(f.bytes_to_device, 4000u);
  EXPECT_EQ(f.conversions, 1);
  EXPECT_EQ(static_cast<float>(h[10]), 5.0f);
  EXPECT_EQ(a.head_device(), "cpu") << "get must not move the head";
  EXPECT_TRUE(a.has_copy(Dtype::f16, "fake:0"));
  // A second get reuses the device copy.
  EXPECT_EQ(a.get(Dtype::f16, "fake:0"), h);
  EXPECT_EQ(f.to_device, 1);
}

TEST(Device, SameDtypeTravelsWithoutConversion) {
  FakeDevice& f = fake();
  SyncedArray a(8);
  static_cast<float*>(a.cast(Dtype::f32))[3] = 7.0f;
  a.get(Dtype::f32, "fake:1");
  EXPECT_EQ(f.to_device, 1);
  EXPECT_EQ(f.conversions, 0);
}

TEST(Device, DeviceToHostConvertsBeforeTheCopy) {
  FakeDevice& f = fake();
  SyncedArray a(100);
  Half* h = static_cast<Half*>(a.cast(Dtype::f16, "fake:0", true));
  for (int i = 0; i < 100; ++i) h[i] = Half(static_cast<float>(i));
  EXPECT_EQ(a.head_device(), "fake:0");
  f.reset_counters();
  const float* x = static_cast<const float*>(a.get(Dtype::f32));
  EXPECT_EQ(f.conversions, 1);
  EXPECT_EQ(f.bytes_to_host, 400u) << "the converted float data travels";
  EXPECT_EQ(x[99], 99.0f);
}

TEST(Device, CastOnTheDeviceDropsTheHostCopies) {
  fake();
  SyncedArray a(4);
  static_cast<float*>(a.cast(Dtype::f32))[0] = 1.0f;
  a.get(Dtype::f16);
  float* d = static_cast<float*>(a.cast(Dtype::f32, "fake:0"));
  EXPECT_EQ(d[0], 1.0f);
  EXPECT_EQ(a.num_copies(), 1u);
  EXPECT_EQ(a.head_device(), "fake:0");
  d[0] = 2.0f;
  EXPECT_EQ(static_cast<const float*>(a.get(Dtype::f32))[0], 2.0f);
}

TEST(Device, DeferredFillRunsOnTheDevice) {
  FakeDevice& f = fake();
  SyncedArray a(16);
  a.fill(3.0);
  const BFloat16* b =
      static_cast<const BFloat16*>(a.get(Dtype::bf16, "fake:0"));
  EXPECT_EQ(f.fills, 1);
  EXPECT_EQ(f.to_device, 0) << "a fill needs no transfer";
  EXPECT_EQ(static_cast<float>(b[15]), 3.0f);
  // cast with write_only skips the fill.
  a.zero();
  f.reset_counters();
  a.cast(Dtype::f32, "fake:0", true);
  EXPECT_EQ(f.fills, 0);
}

TEST(Device, BetweenTwoDevicesGoesThroughTheHost) {
  FakeDevice& f = fake();
  SyncedArray a(10);
  float* d0 = static_cast<float*>(a.cast(Dtype::f32, "fake:0", true));
  for (int i = 0; i < 10; ++i) d0[i] = static_cast<float>(-i);
  const Half* d1 = static_cast<const Half*>(a.get(Dtype::f16, "fake:1"));
  EXPECT_EQ(f.to_host, 1);
  EXPECT_EQ(f.to_device, 1);
  EXPECT_EQ(static_cast<float>(d1[9]), -9.0f);
  // On one device a dtype change is a conversion there, no transfer.
  f.reset_counters();
  a.get(Dtype::bf16, "fake:0");
  EXPECT_EQ(f.conversions, 1);
  EXPECT_EQ(f.to_host + f.to_device, 0);
}

// transfer_stats() counts what crossed between the host and a device, in
// both directions and whatever the device, and nothing that stayed on one
// side: the figure a training step on a GPU is held to.
TEST(Device, TransferStatsCountHostDeviceCopies) {
  fake();
  reset_transfer_stats();
  SyncedArray a(10);
  static_cast<float*>(a.cast(Dtype::f32))[0] = 1.0f;
  a.get(Dtype::f16, "fake:0");  // host -> device, converted there
  TransferStats t = transfer_stats();
  EXPECT_EQ(t.to_device, 1u);
  EXPECT_EQ(t.bytes_to_device, 40u) << "host data travels in its own dtype";
  EXPECT_EQ(t.to_host, 0u);
  a.cast(Dtype::f16, "fake:0");  // the device copy becomes the head
  a.get(Dtype::bf16, "fake:0");  // converted from it, on the device
  EXPECT_EQ(transfer_stats().to_device, 1u) << "nothing crossed";
  a.get(Dtype::f32, "fake:1");  // device 0 -> host -> device 1
  t = transfer_stats();
  EXPECT_EQ(t.to_host, 1u);
  EXPECT_EQ(t.bytes_to_host, 20u) << "device data travels in its dtype";
  EXPECT_EQ(t.to_device, 2u);
  a.get(Dtype::f32);  // back to the host, from the head on device 0
  EXPECT_EQ(transfer_stats().to_host, 2u);
  reset_transfer_stats();
  t = transfer_stats();
  EXPECT_EQ(t.to_device + t.to_host + t.bytes_to_device + t.bytes_to_host, 0u);
}

TEST(Device, CastTakingHeadHandsBackTheOldHead) {
  fake();
  SyncedArray a(5);
  Half* h = static_cast<Half*>(a.cast(Dtype::f16, "fake:0", true));
  for (int i = 0; i < 5; ++i) h[i] = Half(static_cast<float>(i + 1));
  a.get(Dtype::f32);  // a host copy that must go
  Array old;
  float* out =
      static_cast<float*>(a.cast_taking_head(Dtype::f32, "fake:0", &old));
  ASSERT_TRUE(old.memory);
  EXPECT_EQ(old.dtype, Dtype::f16);
  EXPECT_EQ(old.device, "fake:0");
  EXPECT_EQ(static_cast<float>(static_cast<const Half*>(old.data())[4]), 5.0f);
  EXPECT_EQ(a.num_copies(), 1u);
  EXPECT_EQ(a.dtype(), Dtype::f32);
  EXPECT_EQ(a.head_device(), "fake:0");
  out[0] = 42.0f;
  EXPECT_EQ(static_cast<const float*>(a.get(Dtype::f32))[0], 42.0f);
  // When the head already is the copy, nothing is handed back.
  float* again =
      static_cast<float*>(a.cast_taking_head(Dtype::f32, "fake:0", &old));
  EXPECT_FALSE(old.memory);
  EXPECT_EQ(again, out);
}

TEST(Device, DeviceMemoryIsCountedByItsAllocator) {
  fake();
  const MemoryStats before = device_memory_stats("fake:0");
  {
    SyncedArray a(1 << 20);
    a.cast(Dtype::f32, "fake:0", true);
    EXPECT_EQ(device_memory_stats("fake:0").in_use, before.in_use + (4u << 20));
  }
  EXPECT_EQ(device_memory_stats("fake:0").in_use, before.in_use);
  EXPECT_GE(device_memory_stats("fake:0").cached, 4u << 20);
}

TEST(Device, UnavailableDevicesSayWhy) {
  FakeDevice& f = fake();
  SyncedArray a(1);
  EXPECT_EQ(message_of([&] { a.get(Dtype::f32, "fake:2"); }),
            "[SyncedArray::get] device 'fake:2' is not available: there are "
            "2 fake devices");
  f.devices = 0;
  EXPECT_EQ(message_of([&] { a.cast(Dtype::f32, "fake:0"); }),
            "[SyncedArray::cast] device 'fake:0' is not available: no fake "
            "device present");
  f.devices = 2;
  EXPECT_EQ(message_of([&] { a.get(Dtype::f32, "tpu:0"); }),
            "[SyncedArray::get] device 'tpu:0' is not available: no backend "
            "named 'tpu' is built in");
  EXPECT_EQ(message_of([&] { a.get(Dtype::f32, "fake"); }),
            "[SyncedArray::get] device 'fake' is not a device name; expected "
            "cpu or <backend>:<index>, e.g. cuda:0");
  EXPECT_NE(message_of([&] {
              a.get(Dtype::f32, ":0");
            }).find("device ':0' is not a device name"),
            std::string::npos);
}

TEST(Device, CudaIsReportedByCountWithAReason) {
  // In a build without CUDA, or on a machine without a GPU, the count is 0
  // and the reason says which; with a GPU it is the number of GPUs.
  std::string why;
  const int n = device_count("cuda", &why);
  if (n == 0) {
    EXPECT_FALSE(why.empty());
    SyncedArray a(1);
    const std::string msg = message_of([&] { a.get(Dtype::f32, "cuda:0"); });
    EXPECT_EQ(msg,
              "[SyncedArray::get] device 'cuda:0' is not available: " + why);
  } else {
    EXPECT_GT(n, 0);
  }
}

}  // namespace
}  // namespace mg
