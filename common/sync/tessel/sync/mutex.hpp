#pragma once
// Compiler-checked locking. Clang's thread-safety analysis (-Wthread-safety, an error
// in clang builds: TESSEL_THREAD_SAFETY in the top CMakeLists.txt) proves at compile
// time that every member marked GUARDED_BY(mu_) is touched only with mu_ held, that
// every REQUIRES(mu_) function (the `*_locked` ones) is called with it held, and that
// no EXCLUDES(mu_) function is called with it held. libstdc++'s std::mutex carries no
// annotations, so annotated code uses tessel::Mutex (a std::mutex), tessel::MutexLock
// (scoped, like std::unique_lock: it may unlock() and lock() again) and
// tessel::CondVar (a std::condition_variable that waits on a Mutex held by the caller).
// The analysis sees no lock through std::lock_guard or std::unique_lock. A lambda that
// runs with the lock held (a condition's predicate, a commit's apply step) says so:
// `[&]() REQUIRES(mu_) { ... }`. Other compilers (gcc) see empty macros and the same code.

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define TESSEL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TESSEL_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) TESSEL_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY TESSEL_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) TESSEL_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) TESSEL_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) TESSEL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) TESSEL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) TESSEL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) TESSEL_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) TESSEL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) TESSEL_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS TESSEL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace tessel {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock (checks nothing at run time).
  void assert_held() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope. unlock() and lock() let it drop the lock for a while
// (the analysis follows both); the destructor unlocks only if held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  // Takes over a lock the caller already holds (after `if (!mu.try_lock()) ...`).
  MutexLock(Mutex& mu, std::adopt_lock_t) REQUIRES(mu) : mu_(mu) {}
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// std::condition_variable for a tessel::Mutex: every wait takes the Mutex, which the
// caller holds (as with std::condition_variable, it is released while waiting and held
// again on return, also when the predicate throws). A predicate reading guarded members
// is a `[&]() REQUIRES(mu_) {...}` lambda: it runs with the lock held.
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(Mutex& mu) REQUIRES(mu) {
    Adopted lk(mu);
    cv_.wait(lk.lock);
  }
  template <class Pred>
  void wait(Mutex& mu, Pred pred) REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    Adopted lk(mu);
    cv_.wait(lk.lock, std::move(pred));
  }
  // Returns pred() at the end: false when it timed out with the predicate still false.
  template <class Rep, class Period, class Pred>
  bool wait_for(Mutex& mu, const std::chrono::duration<Rep, Period>& d, Pred pred)
      REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    Adopted lk(mu);
    return cv_.wait_for(lk.lock, d, std::move(pred));
  }

 private:
  // A std::unique_lock on the Mutex's std::mutex that leaves it locked when it ends.
  struct Adopted {
    explicit Adopted(Mutex& mu) : lock(mu.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };
  std::condition_variable cv_;
};

}  // namespace tessel
