// expiring/redis/cmd_expiry.hpp: the key expiry commands: TTL PTTL EXPIRETIME PEXPIRETIME EXPIRE PEXPIRE EXPIREAT PEXPIREAT
// PERSIST (semantics.md B §2.1); SET's and GETEX's expiry options are with the strings.
//
// The implementations of CommandExecutor's members for this family; the class, its dispatch
// and the command table (name, arity, flags, key positions, handler) are in commands.hpp, which
// includes this file at its end. Include commands.hpp, not this file.
#pragma once

#include "commands.hpp"

namespace expiring::redis {

template <class Clock>
Reply CommandExecutor<Clock>::cmd_ttl(const Args& a, Session&) { return Reply::integer(store_->ttl(a[1])); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_pttl(const Args& a, Session&) { return Reply::integer(store_->pttl(a[1])); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_expiretime(const Args& a, Session&) { return Reply::integer(store_->expiretime(a[1])); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_pexpiretime(const Args& a, Session&) { return Reply::integer(store_->pexpiretime(a[1])); }

template <class Clock>
Reply CommandExecutor<Clock>::expire_generic(const Args& a, const char* name, ExpireCommand cmd) {
  bool nx = false, xx = false, gt = false, lt = false;
  for (std::size_t j = 3; j < a.size(); ++j) {
    if (detail::is_opt(a[j], "nx")) {
      nx = true;
    } else if (detail::is_opt(a[j], "xx")) {
      xx = true;
    } else if (detail::is_opt(a[j], "gt")) {
      gt = true;
    } else if (detail::is_opt(a[j], "lt")) {
      lt = true;
    } else {
      return detail::error_format("Unsupported option " + std::string(detail::cstr(a[j])));
    }
  }
  if (nx && (xx || gt || lt)) return Reply::error("ERR NX and XX, GT or LT options at the same time are not compatible");
  if (gt && lt) return Reply::error("ERR GT and LT options at the same time are not compatible");
  std::int64_t v = 0;
  if (!to_int(a[2], v)) return not_integer();
  ExpireFlags flags = ExpireFlags::None;
  if (nx) flags = flags | ExpireFlags::NX;
  if (xx) flags = flags | ExpireFlags::XX;
  if (gt) flags = flags | ExpireFlags::GT;
  if (lt) flags = flags | ExpireFlags::LT;
  Result<bool> r = false;
  switch (cmd) {
    case ExpireCommand::expire: r = store_->expire(a[1], v, flags); break;
    case ExpireCommand::pexpire: r = store_->pexpire(a[1], v, flags); break;
    case ExpireCommand::expireat: r = store_->expireat(a[1], v, flags); break;
    case ExpireCommand::pexpireat: r = store_->pexpireat(a[1], v, flags); break;
  }
  if (!r.ok()) {
    if (r.error() == Errc::invalid_expire_time) return invalid_expire(name);
    return Reply::error(std::string("ERR ") + to_string(r.error()));
  }
  return Reply::integer(*r ? 1 : 0);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_expire(const Args& a, Session&) { return expire_generic(a, "expire", ExpireCommand::expire); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_pexpire(const Args& a, Session&) { return expire_generic(a, "pexpire", ExpireCommand::pexpire); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_expireat(const Args& a, Session&) { return expire_generic(a, "expireat", ExpireCommand::expireat); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_pexpireat(const Args& a, Session&) { return expire_generic(a, "pexpireat", ExpireCommand::pexpireat); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_persist(const Args& a, Session&) { return Reply::integer(store_->persist(a[1]) ? 1 : 0); }

}  // namespace expiring::redis
