// ThreadSanitizer builds only (--config=tsan): makes absl::Mutex visible to
// TSan.
//
// Debian's abseil is a prebuilt, uninstrumented shared library, and
// absl::Mutex locks with its own atomics and futex calls rather than
// pthread mutexes, so TSan sees none of its synchronization and reports every
// access our code makes under an absl::Mutex as a race. This file defines
// absl::Mutex's out-of-line lock functions in the test executable, which
// interposes them for every caller (the executable's definitions come first
// in symbol lookup): each forwards to abseil's own function (dlsym
// RTLD_NEXT) between the TSan mutex annotations abseil itself would emit if
// it were built with -fsanitize=thread. Locking behaviour is unchanged.

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/config.h"
#include "absl/synchronization/mutex.h"

namespace {

#define TORCHSCAN_STRINGIFY_INNER(x) #x
#define TORCHSCAN_STRINGIFY(x) TORCHSCAN_STRINGIFY_INNER(x)

// The mangled name of absl::Mutex::<method>() (e.g. "4Lock"), with abseil's
// inline namespace when it has one.
std::string MangledMutexMethod(const char* method) {
  std::string inline_namespace;
#if ABSL_OPTION_USE_INLINE_NAMESPACE
  const std::string name =
      TORCHSCAN_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  inline_namespace = std::to_string(name.size()) + name;
#endif
  return "_ZN4absl" + inline_namespace + "5Mutex" + method + "Ev";
}

template <typename Result>
Result (*Real(const char* method))(absl::Mutex*) {
  const std::string name = MangledMutexMethod(method);
  void* symbol = dlsym(RTLD_NEXT, name.c_str());
  if (symbol == nullptr) {
    std::fprintf(stderr, "absl_mutex_tsan: cannot find %s\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Result (*)(absl::Mutex*)>(symbol);
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static void (*const real)(Mutex*) = Real<void>("4Lock");
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

bool Mutex::TryLock() {
  static bool (*const real)(Mutex*) = Real<bool>("7TryLock");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed),
      0);
  return locked;
}

void Mutex::Unlock() {
  static void (*const real)(Mutex*) = Real<void>("6Unlock");
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderLock() {
  static void (*const real)(Mutex*) = Real<void>("10ReaderLock");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::ReaderTryLock() {
  static bool (*const real)(Mutex*) = Real<bool>("13ReaderTryLock");
  const unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

void Mutex::ReaderUnlock() {
  static void (*const real)(Mutex*) = Real<void>("12ReaderUnlock");
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

ABSL_NAMESPACE_END
}  // namespace absl
