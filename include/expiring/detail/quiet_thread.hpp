// expiring/detail/quiet_thread.hpp: the library's background threads take no signal.
//
// A thread inherits the signal mask of the thread that creates it. A process that handles
// SIGTERM in one place (a signalfd, sigwait() in a chosen thread) blocks it before it starts
// threads; one that has not blocked it yet when the library starts a thread (the append log's
// fsync thread, the lazy-free reclaimer, an Expirer) would otherwise let the kernel deliver
// SIGTERM to that thread, where the default action ends the process without the caller's
// shutdown. So the threads of the optional rooms (the append log, ConcurrentStore's Expirer)
// are created with every blockable signal blocked (the creating thread's mask is restored at
// once), and signals stay the application's business. Synchronous faults (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL) are still delivered: the kernel does not let them be blocked. The core's one
// thread, the lazy-free reclaimer (Options::lazyfree_background), is a plain std::thread: the
// core includes no POSIX header (packaging.portable_headers checks it), so it takes the mask
// of the thread that builds the store.
#ifndef EXPIRING_DETAIL_QUIET_THREAD_HPP
#define EXPIRING_DETAIL_QUIET_THREAD_HPP

#include <thread>
#include <utility>

#if defined(__unix__) || defined(__unix) || (defined(__APPLE__) && defined(__MACH__))
#include <pthread.h>
#include <signal.h>
#define EXPIRING_QUIET_THREAD_POSIX 1
#endif

namespace expiring::detail {

template <class F>
std::thread quiet_thread(F&& fn) {
#if defined(EXPIRING_QUIET_THREAD_POSIX)
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  struct Restore {
    sigset_t* old;
    ~Restore() { pthread_sigmask(SIG_SETMASK, old, nullptr); }
  } restore{&old};
  return std::thread(std::forward<F>(fn));
#else
  return std::thread(std::forward<F>(fn));
#endif
}

}  // namespace expiring::detail

#endif  // EXPIRING_DETAIL_QUIET_THREAD_HPP
