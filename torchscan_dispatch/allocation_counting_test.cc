#include "torchscan_dispatch/allocation_counting.h"

#include <cstdint>
#include <memory>
#include <new>
#include <thread>

#include "gtest/gtest.h"

namespace torchscan::dispatch {
namespace {

// A new/delete pair the compiler can see whole may be elided (C++14); an
// allocation whose address escapes here is not.
void* volatile escaped = nullptr;

template <typename T>
T* Escape(T* pointer) {
  escaped = pointer;
  return pointer;
}

struct alignas(128) OverAligned {
  char bytes[128];
};

TEST(AllocationCountingTest, CountsEachPlainAndArrayNew) {
  const std::int64_t calls = OperatorNewCallsOf([] {
    delete Escape(new int(1));
    delete[] Escape(new int[3]);
  });
  EXPECT_EQ(2, calls);
}

TEST(AllocationCountingTest, CountsOverAlignedNewAndReturnsAlignedMemory) {
  std::uintptr_t address = 0;
  const std::int64_t calls = OperatorNewCallsOf([&] {
    auto object = std::unique_ptr<OverAligned>(Escape(new OverAligned()));
    address = reinterpret_cast<std::uintptr_t>(object.get());
  });
  EXPECT_EQ(1, calls);
  EXPECT_EQ(0u, address % alignof(OverAligned));
}

TEST(AllocationCountingTest, CountsNothrowNew) {
  const std::int64_t calls = OperatorNewCallsOf([] {
    delete Escape(new (std::nothrow) int(1));
    ::operator delete (::operator new (64, std::align_val_t{256}, std::nothrow),
                       std::align_val_t{256});
  });
  EXPECT_EQ(2, calls);
}

TEST(AllocationCountingTest, DoesNotCountOtherThreads) {
  const std::int64_t calls = OperatorNewCallsOf([] {
    std::thread other([] {
      for (int i = 0; i < 10; ++i) delete Escape(new int(i));
    });
    other.join();
  });
  // Starting the thread allocates its state on this thread (libstdc++: one
  // object); the ten allocations of the other thread are not counted.
  EXPECT_GE(1, calls);
}

TEST(AllocationCountingTest, StartsFromZeroEachTime) {
  OperatorNewCallsOf([] { delete Escape(new int(1)); });
  EXPECT_EQ(0, OperatorNewCallsOf([] {}));
}

}  // namespace
}  // namespace torchscan::dispatch
