// expiring/detail/clone_ptr.hpp: an owning pointer to a polymorphic object that copies the
// object, through its virtual clone(), when it is itself copied. The event queue and the
// change feed keep their machinery behind one (created on first use, so that a program that
// never uses them compiles none of it) and stay copyable with the store.
#pragma once

#include <memory>
#include <utility>

namespace expiring::detail {

// Base must declare `virtual std::unique_ptr<Base> clone() const`.
template <class Base>
class ClonePtr {
 public:
  ClonePtr() = default;
  ClonePtr(const ClonePtr& o) : p_(o.p_ ? o.p_->clone() : nullptr) {}
  ClonePtr(ClonePtr&&) noexcept = default;
  // The copy is made before anything changes: if clone() throws, *this is as it was.
  ClonePtr& operator=(const ClonePtr& o) {
    if (this != &o) p_ = o.p_ ? o.p_->clone() : nullptr;
    return *this;
  }
  ClonePtr& operator=(ClonePtr&&) noexcept = default;
  ~ClonePtr() = default;

  // A new, value-initialised T in place of what was held.
  template <class T>
  T& emplace() {
    auto p = std::make_unique<T>();
    T& t = *p;
    p_ = std::move(p);
    return t;
  }

  explicit operator bool() const noexcept { return p_ != nullptr; }
  Base* operator->() const noexcept { return p_.get(); }
  Base& operator*() const noexcept { return *p_; }

 private:
  std::unique_ptr<Base> p_;
};

}  // namespace expiring::detail
