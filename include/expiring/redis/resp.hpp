// expiring/redis/resp.hpp: RESP2, the Redis wire protocol: a reply value type, its writer,
// and an incremental request parser.
//
// Overview
// --------
// `Reply` is one RESP2 reply: a status (`+OK`), an error (`-ERR ...`), an integer, a bulk
// string, a nil bulk, an array, or a nil array. `Reply::to_resp()` / `write_resp()` encode it;
// `Reply::write_bulk()` and its siblings encode one piece without building a Reply, for a
// command that streams a large reply; `Reply::from_resp()` decodes what they wrote.
//
// `OutputBuffer` is a client's pending output: a list of blocks (Redis's reply list), so that
// appending never copies what is already buffered and a reply costs its size once.
//
// `RequestParser` turns the bytes a client sends into commands (vectors of binary-safe
// strings), the way Redis 7.0's networking.c does, including its quirks, so that a client
// sees exactly what a real redis-server would answer:
//
//   * multibulk requests (`*<n>\r\n$<len>\r\n<bytes>\r\n...`) and inline requests
//     (`SET k "v w"\n`, split like Redis's sdssplitargs: quotes, \xHH and \n escapes);
//   * any split of the input into reads (partial frames), and any number of requests in one
//     read (pipelining); empty inline lines and `*0` / `*-1` requests are skipped silently;
//   * Redis's protocol errors, word for word ("ERR Protocol error: invalid multibulk length",
//     "... expected '$', got 'x'", "... invalid bulk length", "... unbalanced quotes in
//     request", "... too big inline request", "... too big mbulk count string", "... too big
//     bulk count string"). After one, the parser stays failed: the server sends the error and
//     closes the connection, as Redis does;
//   * Redis's leniency, kept on purpose: the two bytes after a bulk's payload are skipped
//     without being checked, and the byte after the `\r` of a length line is not checked
//     either. A NUL byte before the line terminator makes Redis wait for more input (its
//     strchr() stops there) until the line exceeds 64 KB; the parser does the same.
//
// Memory: nothing is allocated on a client's say-so. A bulk length above
// `ParserLimits::max_bulk_len` (Redis proto-max-bulk-len, 512 MB) is refused as soon as its
// header line is complete; a bulk within the limit is only ever stored as its bytes arrive (one
// of 32 KB or more is moved into its own string as it arrives, growing geometrically up to its
// length, so the input buffer never holds it beside its copy; an input buffer grown past 64 KB
// is freed once consumed);
// the argument vector of a multibulk request is reserved for at most 1024 entries up front,
// whatever count the client announces. Everything buffered for one client (unparsed input plus
// the arguments of the command being assembled, each at its real cost: an empty argument
// still costs its string object) is capped by `max_query_buffer` (Redis
// client-query-buffer-limit, 1 GB); past it the parser reports `Status::limit` and the server
// closes the connection without a reply, as Redis does. A client that has not authenticated
// (`ParserLimits::authenticated` false) may announce at most 10 arguments of 16 KB each.
//
// `ParserLimits::strict` drops the leniency for a peer that is a server of ours (a replica's
// link to its primary): only multibulk requests, CRLF checked after every length line and
// bulk, and a NUL in a length line refused at once instead of waited on.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace expiring::redis {

// ==== Reply ===================================================================================

// One reply, as a value: its type, its text (str()), its integer and its elements. The static
// members build each type; write_resp() encodes a reply in RESP2 or RESP3 and from_resp()
// decodes one. Replies compare with `==` (type, text, integer and elements, deeply).
class Reply {
 public:
  // The kind of a reply: RESP2's seven, then RESP3's, each with the bytes that start it.
  enum class Type : std::uint8_t {
    status,     // +OK
    error,      // -ERR message (the text is stored without the '-')
    integer,    // :42
    bulk,       // $3\r\nfoo
    nil,        // $-1 (null bulk string)
    array,      // *2 ...
    nil_array,  // *-1
    // RESP3 (HELLO 3); to a RESP2 client each is written in its RESP2 form:
    map,         // %2 key value key value (RESP2: *4 ...); elements() holds key, value, ...
    set,         // ~2 ... (RESP2: *2 ...)
    push,        // >3 ... out-of-band data, pub/sub's messages (RESP2: *3 ...)
    double_,     // ,3.14 (RESP2: the bulk "3.14"); str() holds the text
    boolean,     // #t / #f (RESP2: :1 / :0)
    verbatim,    // =28 txt:... (RESP2: the bulk of the text); str() holds the text
    big_number,  // (1234... (RESP2: the bulk of the digits)
    attribute,   // |1 key value, then the reply it annotates (RESP2: that reply alone);
                 // elements() holds {a map, the reply}
  };

  Reply() = default;  // a nil bulk

  // A status reply, `+s` (one line: a CR or LF in `s` is written as a space).
  static Reply status(std::string s) { return Reply(Type::status, std::move(s)); }
  // `+OK`, the status most writes answer.
  static Reply ok() { return status("OK"); }
  // `text` is the whole error line without the leading '-', e.g. "ERR syntax error" or
  // "WRONGTYPE Operation against a key holding the wrong kind of value".
  static Reply error(std::string text) { return Reply(Type::error, std::move(text)); }
  // An integer reply, `:v`.
  static Reply integer(std::int64_t v) {
    Reply r(Type::integer, {});
    r.int_ = v;
    return r;
  }
  // A bulk string, `$<length>` then the bytes of `s` (binary-safe).
  static Reply bulk(std::string s) { return Reply(Type::bulk, std::move(s)); }
  // The nil bulk, `$-1` (RESP3 `_`): GET of a missing key.
  static Reply nil() { return Reply(); }
  // An array of replies, `*<n>` then each element.
  static Reply array(std::vector<Reply> elements = {}) {
    Reply r(Type::array, {});
    r.elements_ = std::move(elements);
    return r;
  }
  // The nil array, `*-1` (RESP3 `_`): EXEC of a transaction a WATCHed key aborted.
  static Reply nil_array() { return Reply(Type::nil_array, {}); }
  // A RESP3 map, `%<n>`: `pairs` holds key, value, key, value, ... (n pairs); to a RESP2
  // client, the flat array of those 2n replies.
  static Reply map(std::vector<Reply> pairs = {}) {  // key, value, key, value, ...
    Reply r = array(std::move(pairs));
    r.type_ = Type::map;
    return r;
  }
  // A RESP3 set, `~<n>`; to a RESP2 client, an array.
  static Reply set(std::vector<Reply> elements = {}) {
    Reply r = array(std::move(elements));
    r.type_ = Type::set;
    return r;
  }
  // A RESP3 push, `><n>`: out-of-band data, such as a pub/sub message; to a RESP2 client,
  // an array.
  static Reply push_message(std::vector<Reply> elements) {
    Reply r = array(std::move(elements));
    r.type_ = Type::push;
    return r;
  }
  // Redis's addReplyDouble(): "%.17g", and "inf" / "-inf".
  static Reply double_value(double d) {
    char buf[64];
    const int n = std::isinf(d) ? std::snprintf(buf, sizeof buf, "%s", d > 0 ? "inf" : "-inf")
                                : std::snprintf(buf, sizeof buf, "%.17g", d);
    return Reply(Type::double_, std::string(buf, static_cast<std::size_t>(n > 0 ? n : 0)));
  }
  // A RESP3 boolean, `#t` or `#f`; to a RESP2 client, the integer 1 or 0.
  static Reply boolean(bool b) {
    Reply r(Type::boolean, {});
    r.int_ = b ? 1 : 0;
    return r;
  }
  // A RESP3 verbatim string, `=<length>` then `txt:` and `text` (INFO answers one); to a RESP2
  // client, the bulk of `text`.
  static Reply verbatim(std::string text) { return Reply(Type::verbatim, std::move(text)); }
  // A RESP3 big number, `(` then `digits` as given; to a RESP2 client, their bulk string.
  static Reply big_number(std::string digits) { return Reply(Type::big_number, std::move(digits)); }
  // `reply` with RESP3 attributes, `|<n>` then `attributes_map` (a map()) before it; to a
  // RESP2 client, `reply` alone.
  static Reply with_attribute(Reply attributes_map, Reply reply) {
    Reply r = array({std::move(attributes_map), std::move(reply)});
    r.type_ = Type::attribute;
    return r;
  }

  // The reply's type; is_error() and is_nil() test for an error and for the nil bulk (not the
  // nil array).
  Type type() const noexcept { return type_; }
  bool is_error() const noexcept { return type_ == Type::error; }
  bool is_nil() const noexcept { return type_ == Type::nil; }
  // The text of a status, error or bulk reply.
  const std::string& str() const noexcept { return str_; }
  // The value of an integer reply (a boolean's 1 or 0); 0 for the other types.
  std::int64_t integer() const noexcept { return int_; }
  // The elements of an array, set or push; a map's keys and values in turn; an attribute's
  // {map, reply}. Empty for the other types.
  const std::vector<Reply>& elements() const noexcept { return elements_; }
  std::vector<Reply>& elements() noexcept { return elements_; }
  // Appends an element to an array reply.
  Reply& push(Reply r) {
    elements_.push_back(std::move(r));
    return *this;
  }

  // Appends the encoding in protocol `proto` (2: RESP2, 3: RESP3) to `out`, a std::string or an
  // OutputBuffer (anything with append(const char*, std::size_t)). A status or error text never
  // contains CR or LF on the wire: any found are written as spaces (Redis does the same for
  // messages that quote user input).
  template <class Sink>
  void write_resp(Sink& out, int proto = 2) const {
    switch (type_) {
      case Type::status:
      case Type::error: {
        out.append(type_ == Type::status ? "+" : "-", 1);
        std::size_t from = 0;
        for (std::size_t i = 0; i <= str_.size(); ++i) {
          if (i == str_.size() || str_[i] == '\r' || str_[i] == '\n') {
            out.append(str_.data() + from, i - from);
            if (i < str_.size()) out.append(" ", 1);
            from = i + 1;
          }
        }
        out.append("\r\n", 2);
        break;
      }
      case Type::integer:
        write_integer(out, int_);
        break;
      case Type::bulk:
        write_bulk(out, str_);
        break;
      case Type::nil:
        write_nil(out, proto);
        break;
      case Type::array:
        write_array_header(out, elements_.size());
        for (const Reply& e : elements_) e.write_resp(out, proto);
        break;
      case Type::nil_array:
        if (proto >= 3) {
          out.append("_\r\n", 3);
        } else {
          out.append("*-1\r\n", 5);
        }
        break;
      case Type::map:
        write_map_header(out, elements_.size() / 2, proto);
        for (const Reply& e : elements_) e.write_resp(out, proto);
        break;
      case Type::set:
      case Type::push:
        write_header(out, proto < 3 ? '*' : type_ == Type::set ? '~' : '>', elements_.size());
        for (const Reply& e : elements_) e.write_resp(out, proto);
        break;
      case Type::double_:
      case Type::big_number:
        if (proto < 3) {
          write_bulk(out, str_);
        } else {
          out.append(type_ == Type::double_ ? "," : "(", 1);
          out.append(str_.data(), str_.size());
          out.append("\r\n", 2);
        }
        break;
      case Type::boolean:
        if (proto < 3) {
          write_integer(out, int_);
        } else {
          out.append(int_ != 0 ? "#t\r\n" : "#f\r\n", 4);
        }
        break;
      case Type::verbatim:
        if (proto < 3) {
          write_bulk(out, str_);
        } else {
          write_header(out, '=', str_.size() + 4);
          out.append("txt:", 4);
          out.append(str_.data(), str_.size());
          out.append("\r\n", 2);
        }
        break;
      case Type::attribute:
        if (proto >= 3) {
          const Reply& attrs = elements_[0];
          write_header(out, '|', attrs.elements_.size() / 2);
          for (const Reply& e : attrs.elements_) e.write_resp(out, proto);
        }
        elements_[1].write_resp(out, proto);
        break;
    }
  }
  // The pieces of write_resp(), for a command that streams its reply into the output buffer
  // instead of building a Reply (MGET of large values: the bytes are copied once, from the
  // store to the buffer).
  template <class Sink>
  static void write_bulk(Sink& out, std::string_view s) {
    out.append("$", 1);
    append_int(out, static_cast<std::int64_t>(s.size()));
    out.append("\r\n", 2);
    out.append(s.data(), s.size());
    out.append("\r\n", 2);
  }
  template <class Sink>
  static void write_nil(Sink& out, int proto = 2) {
    if (proto >= 3) {
      out.append("_\r\n", 3);
    } else {
      out.append("$-1\r\n", 5);
    }
  }
  // A map of n pairs: %n in RESP3, a flat array of 2n in RESP2.
  template <class Sink>
  static void write_map_header(Sink& out, std::size_t n, int proto) {
    write_header(out, proto >= 3 ? '%' : '*', proto >= 3 ? n : 2 * n);
  }
  // Out-of-band data (pub/sub messages): >n in RESP3, an array in RESP2.
  template <class Sink>
  static void write_push_header(Sink& out, std::size_t n, int proto) {
    write_header(out, proto >= 3 ? '>' : '*', n);
  }
  // More pieces: an integer (`:v`), an array's header (`*n`, its n elements follow), and any
  // aggregate's header (`type`, then n).
  template <class Sink>
  static void write_integer(Sink& out, std::int64_t v) {
    out.append(":", 1);
    append_int(out, v);
    out.append("\r\n", 2);
  }
  template <class Sink>
  static void write_array_header(Sink& out, std::size_t n) {
    write_header(out, '*', n);
  }
  template <class Sink>
  static void write_header(Sink& out, char type, std::size_t n) {
    out.append(&type, 1);
    append_int(out, static_cast<std::int64_t>(n));
    out.append("\r\n", 2);
  }
  // The encoding in protocol `proto` (2 or 3) as a string: write_resp() into a new one.
  std::string to_resp(int proto = 2) const {
    std::string out;
    write_resp(out, proto);
    return out;
  }

  // Decodes one reply that write_resp() (or a reply writer) encoded, starting at `pos` and
  // advancing it. False on truncated or malformed input (nothing a writer produces).
  static bool from_resp(std::string_view in, std::size_t& pos, Reply& out) {
    const std::size_t eol = in.find("\r\n", pos);
    if (pos >= in.size() || eol == std::string_view::npos) return false;
    const char t = in[pos];
    const std::string_view line = in.substr(pos + 1, eol - pos - 1);
    pos = eol + 2;
    std::int64_t n = 0;
    switch (t) {
      case '+': out = status(std::string(line)); return true;
      case '-': out = error(std::string(line)); return true;
      case ':':
        if (!parse_length(line, n)) return false;
        out = integer(n);
        return true;
      case '$':
        if (line == "-1") {
          out = nil();
          return true;
        }
        if (!parse_length(line, n) || n < 0 || in.size() - pos < static_cast<std::size_t>(n) + 2) return false;
        out = bulk(std::string(in.substr(pos, static_cast<std::size_t>(n))));
        pos += static_cast<std::size_t>(n) + 2;
        return true;
      case '*':
      case '~':
      case '>':
      case '%': {
        if (t == '*' && line == "-1") {
          out = nil_array();
          return true;
        }
        if (!parse_length(line, n) || n < 0) return false;
        if (t == '%') n *= 2;
        Reply a = array();
        a.type_ = t == '*' ? Type::array : t == '~' ? Type::set : t == '>' ? Type::push : Type::map;
        for (std::int64_t i = 0; i < n; ++i) {
          Reply e;
          if (!from_resp(in, pos, e)) return false;
          a.push(std::move(e));
        }
        out = std::move(a);
        return true;
      }
      case '_': out = nil(); return true;
      case ',': out = Reply(Type::double_, std::string(line)); return true;
      case '(': out = big_number(std::string(line)); return true;
      case '#':
        if (line != "t" && line != "f") return false;
        out = boolean(line == "t");
        return true;
      case '=':
        if (!parse_length(line, n) || n < 4 || in.size() - pos < static_cast<std::size_t>(n) + 2) return false;
        out = verbatim(std::string(in.substr(pos + 4, static_cast<std::size_t>(n) - 4)));
        pos += static_cast<std::size_t>(n) + 2;
        return true;
      case '|': {
        if (!parse_length(line, n) || n < 0) return false;
        Reply attrs = map();
        for (std::int64_t i = 0; i < 2 * n; ++i) {
          Reply e;
          if (!from_resp(in, pos, e)) return false;
          attrs.push(std::move(e));
        }
        Reply real;
        if (!from_resp(in, pos, real)) return false;
        out = with_attribute(std::move(attrs), std::move(real));
        return true;
      }
      default: return false;
    }
  }

  // Equal when the types, texts, integers and elements are (elements compared deeply).
  friend bool operator==(const Reply& a, const Reply& b) {
    return a.type_ == b.type_ && a.str_ == b.str_ && a.int_ == b.int_ && a.elements_ == b.elements_;
  }
  friend bool operator!=(const Reply& a, const Reply& b) { return !(a == b); }

  // A readable rendering in redis-cli's style, for test failure messages.
  friend std::ostream& operator<<(std::ostream& os, const Reply& r) {
    switch (r.type_) {
      case Type::status: return os << r.str_;
      case Type::error: return os << "(error) " << r.str_;
      case Type::integer: return os << "(integer) " << r.int_;
      case Type::bulk: return os << '"' << r.str_ << '"';
      case Type::nil: return os << "(nil)";
      case Type::nil_array: return os << "(nil array)";
      case Type::array:
      case Type::map:
      case Type::set:
      case Type::push:
      case Type::attribute: {
        os << (r.type_ == Type::map ? "{" : r.type_ == Type::set ? "~[" : r.type_ == Type::push ? ">[" : "[");
        for (std::size_t i = 0; i < r.elements_.size(); ++i) os << (i ? ", " : "") << r.elements_[i];
        return os << (r.type_ == Type::map ? "}" : "]");
      }
      case Type::double_: return os << "(double) " << r.str_;
      case Type::big_number: return os << "(big number) " << r.str_;
      case Type::boolean: return os << (r.int_ != 0 ? "(true)" : "(false)");
      case Type::verbatim: return os << "(verbatim) \"" << r.str_ << '"';
    }
    return os;
  }

  // Decimal digits of v (with a '-' when negative), for any int64 including INT64_MIN.
  template <class Sink>
  static void append_int(Sink& out, std::int64_t v) {
    char buf[24];
    char* end = buf + sizeof buf;
    char* p = end;
    std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    do {
      *--p = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) *--p = '-';
    out.append(p, static_cast<std::size_t>(end - p));
  }

 private:
  Reply(Type t, std::string s) : type_(t), str_(std::move(s)) {}
  // A decimal int64 as append_int() writes it.
  static bool parse_length(std::string_view s, std::int64_t& v) noexcept {
    if (s.empty() || s.size() > 20) return false;
    const bool neg = s[0] == '-';
    std::uint64_t u = 0;
    for (std::size_t i = neg ? 1 : 0; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9' || u > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) return false;
      u = u * 10 + static_cast<std::uint64_t>(s[i] - '0');
    }
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (u > kMax + (neg ? 1 : 0)) return false;
    v = neg ? (u == kMax + 1 ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(u))
            : static_cast<std::int64_t>(u);
    return true;
  }

  Type type_ = Type::nil;
  std::string str_;
  std::int64_t int_ = 0;
  std::vector<Reply> elements_;
};

// ==== Output buffer =========================================================================

// A client's pending output as a list of blocks, as Redis keeps its reply list: an append
// never moves the bytes already buffered (a std::string that doubles its capacity holds up to
// twice the output and copies all of it at each growth), and a large bulk value lands in a
// block of its own sized to it, so a reply costs its own size once. The server sends the
// blocks in order (block(i) for writev) and consume()s what the socket took.
class OutputBuffer {
 public:
  static constexpr std::size_t kBlockSize = 16 * 1024;  // Redis PROTO_REPLY_CHUNK_BYTES

  // Appends bytes: into the last block's free room, then a new block of kBlockSize, or of
  // the rest's size when larger. Once the blocks hold limit() bytes or more, an append is
  // dropped and over_limit() turns true.
  void append(const char* p, std::size_t n) {
    if (n == 0 || dropping_) return;
    if (limit_ != 0 && allocated_ >= limit_) {  // from here on the client is being closed
      dropping_ = true;
      return;
    }
    if (!blocks_.empty()) {  // fill the tail block's free room first
      std::string& tail = blocks_.back();
      const std::size_t room = tail.capacity() - tail.size();
      const std::size_t k = room < n ? room : n;
      tail.append(p, k);
      p += k;
      n -= k;
      size_ += k;
    }
    if (n == 0) return;
    blocks_.emplace_back();
    std::string& b = blocks_.back();
    b.reserve(n > kBlockSize ? n : kBlockSize);
    b.append(p, n);
    size_ += n;
    allocated_ += b.capacity();
  }
  // Appends `s`, or the unsent bytes of `o` (which is left as it is).
  void append(std::string_view s) { append(s.data(), s.size()); }
  void append(const OutputBuffer& o) {
    if (&o == this) {  // appending to itself: from a copy, since the blocks grow as it goes
      std::string all;
      for (std::size_t i = 0; i < blocks(); ++i) all.append(block(i));
      append(all);
      return;
    }
    for (std::size_t i = 0; i < o.blocks(); ++i) append(o.block(i));
  }

  // A cap on allocated bytes (0: none, the default). Once reached, appends are dropped and
  // over_limit() is true: the server closes such a client, as Redis stops adding replies to a
  // client past its client-output-buffer-limit, so that one huge reply costs the limit, not
  // its size.
  void set_limit(std::size_t bytes) noexcept { limit_ = bytes; }
  std::size_t limit() const noexcept { return limit_; }
  bool over_limit() const noexcept { return dropping_; }

  // Bytes waiting to be sent.
  std::size_t size() const noexcept { return size_; }
  // The unsent byte at `pos` (< size()), found from the end (a reply just written is in the
  // last blocks), and up to n bytes from `pos` to the end of the line.
  char byte_at(std::size_t pos) const noexcept {
    if (pos >= size_) return '\0';
    std::size_t from_end = size_ - pos;  // >= 1
    for (auto b = blocks_.rbegin(); b != blocks_.rend(); ++b) {
      const std::size_t usable = b + 1 == blocks_.rend() ? b->size() - head_ : b->size();
      if (from_end <= usable) return (*b)[b->size() - from_end];
      from_end -= usable;
    }
    return '\0';
  }
  std::string text_at(std::size_t pos, std::size_t n) const {
    std::string t;
    for (std::size_t i = pos; i < size_ && t.size() < n; ++i) {
      const char c = byte_at(i);
      if (c == '\r') break;
      t.push_back(c);
    }
    return t;
  }
  // Whether no byte waits to be sent.
  bool empty() const noexcept { return size_ == 0; }
  // Bytes the blocks hold allocated (what the buffer costs): client-output-buffer-limit
  // and used memory count this, as Redis counts its reply list's block sizes.
  std::size_t allocated() const noexcept { return allocated_; }

  // The unsent bytes as blocks: block(0) starts with the next byte to send.
  std::size_t blocks() const noexcept { return blocks_.size(); }
  // Block `i` (< blocks()): a view, valid until the buffer next changes.
  std::string_view block(std::size_t i) const noexcept {
    const std::string& b = blocks_[i];
    return i == 0 ? std::string_view(b).substr(head_) : std::string_view(b);
  }
  // Drops the first n unsent bytes (sent); a block is freed once all of it was sent.
  void consume(std::size_t n) noexcept {
    while (n > 0 && !blocks_.empty()) {
      const std::size_t left = blocks_.front().size() - head_;
      if (n < left) {
        head_ += n;
        size_ -= n;
        return;
      }
      n -= left;
      size_ -= left;
      allocated_ -= blocks_.front().capacity();
      blocks_.pop_front();
      head_ = 0;
    }
  }
  // Keeps the first n unsent bytes and drops the rest (a reply that must not be sent).
  void truncate(std::size_t n) noexcept {
    while (size_ > n && !blocks_.empty()) {
      std::string& tail = blocks_.back();
      const std::size_t from = blocks_.size() == 1 ? head_ : 0;  // bytes of the tail not droppable
      const std::size_t droppable = tail.size() - from;
      const std::size_t k = size_ - n < droppable ? size_ - n : droppable;
      tail.resize(tail.size() - k);
      size_ -= k;
      if (tail.size() == from) {
        allocated_ -= tail.capacity();
        blocks_.pop_back();
        if (blocks_.empty()) head_ = 0;
      }
    }
  }
  // Drops everything unsent and frees the blocks.
  void clear() noexcept {
    std::deque<std::string>().swap(blocks_);
    head_ = size_ = allocated_ = 0;
    dropping_ = false;
  }
  // The unsent bytes in one string (tests, adapters).
  std::string str() const {
    std::string s;
    s.reserve(size_);
    for (std::size_t i = 0; i < blocks_.size(); ++i) s.append(block(i));
    return s;
  }

 private:
  std::deque<std::string> blocks_;
  std::size_t head_ = 0;  // bytes of blocks_.front() already sent
  std::size_t size_ = 0;
  std::size_t allocated_ = 0;
  std::size_t limit_ = 0;
  bool dropping_ = false;
};

// ==== Integer grammar =========================================================================

// Redis's string2ll (semantics.md B §2.0): "0", or an optional '-' then a digit 1-9 and more
// digits, within int64, at most 20 bytes. No '+', no leading zeros, no "-0", no spaces.
inline bool parse_int64(std::string_view s, std::int64_t& out) noexcept {
  if (s.empty() || s.size() > 20) return false;
  if (s.size() == 1 && s[0] == '0') {
    out = 0;
    return true;
  }
  std::size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative && ++i == s.size()) return false;
  if (s[i] < '1' || s[i] > '9') return false;
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (negative) {
    if (v > kMax + 1) return false;
    out = v == kMax + 1 ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(v);
  } else {
    if (v > kMax) return false;
    out = static_cast<std::int64_t>(v);
  }
  return true;
}

// ==== Request parser ==========================================================================

// What a RequestParser lets one client make the server hold, with Redis's defaults; CONFIG SET
// changes them through RequestParser::set_limits().
struct ParserLimits {
  // Redis proto-max-bulk-len: the largest bulk argument accepted.
  std::size_t max_bulk_len = std::size_t{512} * 1024 * 1024;
  // Redis PROTO_INLINE_MAX_SIZE: the longest inline request, multibulk count line or bulk
  // length line still waiting for its terminator.
  std::size_t max_inline = 64 * 1024;
  // Redis client-query-buffer-limit: unparsed input plus the arguments of the command being
  // assembled, each argument at its real cost (its string object and its bytes: an empty
  // argument is not free). Past it the connection is closed without a reply.
  std::size_t max_query_buffer = std::size_t{1024} * 1024 * 1024;
  // False for a client that has not authenticated yet (requirepass): as Redis, a multibulk
  // count above 10 or a bulk longer than 16384 bytes is then a protocol error, so an
  // unknown peer cannot make the server hold more than a few small arguments.
  bool authenticated = true;
  // Strict framing, for a link whose peer is a server of ours (a replica reading its
  // primary), not Redis's client leniency: every request is a multibulk, a length line ends
  // in CRLF with no NUL in it, and a bulk is followed by CRLF. Anything else is a protocol
  // error at once, never a wait for more input.
  bool strict = false;
};

namespace detail {
inline bool is_arg_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
inline int hex_digit_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace detail

// Splits a line as Redis's sdssplitargs does (an inline request; a redis.conf directive):
// blanks separate arguments; "double quotes" allow \xHH, \n, \r, \t, \b, \a and \<any>
// escapes; 'single quotes' allow \' only; a closing quote must be followed by a blank or the
// end. False on unbalanced quotes. The line must hold no NUL (callers refuse or stop at one);
// its end acts as one.
inline bool split_args(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  const std::size_t n = line.size();
  auto at = [&](std::size_t i) -> char { return i < n ? line[i] : '\0'; };
  std::size_t p = 0;
  for (;;) {
    while (p < n && detail::is_arg_blank(line[p])) ++p;
    if (p >= n) return true;
    std::string cur;
    bool in_dq = false, in_sq = false, done = false;
    while (!done) {
      const char c = at(p);
      if (in_dq) {
        const int hi = detail::hex_digit_value(at(p + 2));
        const int lo = detail::hex_digit_value(at(p + 3));
        if (c == '\\' && at(p + 1) == 'x' && hi >= 0 && lo >= 0) {
          cur.push_back(static_cast<char>(hi * 16 + lo));
          p += 3;
        } else if (c == '\\' && at(p + 1) != '\0') {
          ++p;
          switch (at(p)) {
            case 'n': cur.push_back('\n'); break;
            case 'r': cur.push_back('\r'); break;
            case 't': cur.push_back('\t'); break;
            case 'b': cur.push_back('\b'); break;
            case 'a': cur.push_back('\a'); break;
            default: cur.push_back(at(p)); break;
          }
        } else if (c == '"') {
          if (at(p + 1) != '\0' && !detail::is_arg_blank(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          cur.push_back(c);
        }
      } else if (in_sq) {
        if (c == '\\' && at(p + 1) == '\'') {
          ++p;
          cur.push_back('\'');
        } else if (c == '\'') {
          if (at(p + 1) != '\0' && !detail::is_arg_blank(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          cur.push_back(c);
        }
      } else {
        switch (c) {
          case ' ':
          case '\n':
          case '\r':
          case '\t':
          case '\0':
            done = true;
            break;
          case '"':
            in_dq = true;
            break;
          case '\'':
            in_sq = true;
            break;
          default:
            cur.push_back(c);
            break;
        }
      }
      if (at(p) != '\0') ++p;
    }
    out.push_back(std::move(cur));
  }
}

// What a vector of arguments costs in memory: the vector's slots (string objects) and the
// arguments' bytes. The query-buffer limit and used_memory count a pending command this way.
inline std::size_t args_cost(const std::vector<std::string>& args) noexcept {
  std::size_t n = args.capacity() * sizeof(std::string);
  for (const std::string& a : args) n += a.size();
  return n;
}

// Turns the bytes a client sends into commands, as Redis 7.0's networking.c does (the file's
// comment has the details): feed() what arrives, then call next() until it answers incomplete.
class RequestParser {
 public:
  // What next() found.
  enum class Status : std::uint8_t {
    incomplete,      // need more input
    command,         // a command was parsed into argv (argv is never empty)
    protocol_error,  // a malformed request: reply error() and close the connection
    limit,           // max_query_buffer exceeded: close the connection without a reply
  };

  // A parser with Redis's default limits, or with `limits`.
  RequestParser() = default;
  explicit RequestParser(ParserLimits limits) : limits_(limits) {}

  // The limits in force.
  const ParserLimits& limits() const noexcept { return limits_; }
  // New limits (CONFIG SET proto-max-bulk-len / client-query-buffer-limit): they apply from
  // the next header line or buffer check on, to a request already being assembled too.
  void set_limits(const ParserLimits& limits) noexcept { limits_ = limits; }

  // Appends bytes received from the client. Input after a failure is ignored.
  void feed(const char* data, std::size_t n) {
    if (failed()) return;
    compact();
    buf_.append(data, n);
  }
  void feed(std::string_view s) { feed(s.data(), s.size()); }

  // Parses the next command. On Status::command, `argv` holds its arguments (replacing what
  // was there). Call repeatedly until it returns incomplete (or a failure).
  Status next(std::vector<std::string>& argv) {
    if (state_ == State::error) return Status::protocol_error;
    if (state_ == State::over_limit) return Status::limit;
    for (;;) {
      Status s = Status::incomplete;
      bool got = false;
      if (state_ == State::idle) {
        if (pos_ == buf_.size()) break;
        if (limits_.strict && buf_[pos_] != '*') return fail("expected '*' at the start of a request");
        state_ = buf_[pos_] == '*' ? State::multibulk_count : State::inline_line;
        scanned_ = 0;
      }
      if (state_ == State::inline_line) {
        s = parse_inline(got);
      } else {
        s = parse_multibulk(got);
      }
      if (s != Status::incomplete) return s;
      if (got) {
        argv.swap(args_);
        args_.clear();
        args_bytes_ = 0;
        return Status::command;
      }
      if (state_ != State::idle) break;  // waiting for more input
      // an empty request was skipped: look at the next one
    }
    if (buffered_bytes() > limits_.max_query_buffer) {
      state_ = State::over_limit;
      release();
      return Status::limit;
    }
    return Status::incomplete;
  }

  // The error reply text of the last protocol error, e.g.
  // "ERR Protocol error: invalid bulk length" (without the RESP '-').
  const std::string& error() const noexcept { return error_; }
  // Whether the parser stopped for good: after a protocol error, or past max_query_buffer.
  // next() then answers the same failure again, and feed() ignores what it is given.
  bool failed() const noexcept { return state_ == State::error || state_ == State::over_limit; }

  // Bytes held: unparsed input plus the arguments assembled so far, at their real cost
  // (args_cost(): the argument vector's slots, each argument's bytes, and the capacity of a
  // big argument still arriving).
  std::size_t buffered_bytes() const noexcept {
    std::size_t n = (buf_.size() - pos_) + args_.capacity() * sizeof(std::string) + args_bytes_;
    if (in_big_arg_) n += args_.back().capacity();
    return n;
  }
  // True when no partial request is pending.
  bool idle() const noexcept { return state_ == State::idle && pos_ == buf_.size(); }

 private:
  enum class State : std::uint8_t { idle, inline_line, multibulk_count, bulk_len, bulk_data, error, over_limit };

  Status fail(const std::string& what) {
    error_ = "ERR Protocol error: " + what;
    state_ = State::error;
    release();
    return Status::protocol_error;
  }
  void release() {
    std::string().swap(buf_);
    std::vector<std::string>().swap(args_);
    pos_ = 0;
    args_bytes_ = 0;
    in_big_arg_ = false;
  }
  // Drops consumed input once it dominates the buffer (amortised O(1) per byte).
  // A buffer grown large by one request is given back once it is consumed (Redis trims its
  // query buffers from its cron).
  void compact() {
    if (pos_ == 0) return;
    if (pos_ == buf_.size()) {
      if (buf_.capacity() > kKeepCapacity) {
        std::string().swap(buf_);
      } else {
        buf_.clear();
      }
      pos_ = 0;
    } else if (pos_ >= 4096 && pos_ * 2 >= buf_.size()) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
  }

  // Finds the first `term` or NUL byte at or after pos_ (continuing a previous scan of the
  // same line). Returns its offset from pos_, or npos if neither was found; `nul` tells
  // whether a NUL came first. Redis uses strchr() on a NUL-terminated buffer, so a NUL hides
  // every terminator after it.
  std::size_t find_terminator(char term, bool& nul) {
    const char* base = buf_.data() + pos_;
    const std::size_t avail = buf_.size() - pos_;
    for (std::size_t i = scanned_; i < avail; ++i) {
      const char c = base[i];
      if (c == term || c == '\0') {
        nul = c == '\0';
        scanned_ = i;
        return i;
      }
    }
    scanned_ = avail;
    nul = false;
    return std::string::npos;
  }

  // ---- inline requests ----
  Status parse_inline(bool& got) {
    bool nul = false;
    const std::size_t nl = find_terminator('\n', nul);
    if (nl == std::string::npos || nul) {
      if (nul) scanned_ = nl;  // stuck on the NUL until the line grows too long
      if (buf_.size() - pos_ > limits_.max_inline) return fail("too big inline request");
      return Status::incomplete;
    }
    std::size_t len = nl;
    if (len > 0 && buf_[pos_ + len - 1] == '\r') --len;
    const std::string_view line(buf_.data() + pos_, len);
    if (!split_args(line, args_)) return fail("unbalanced quotes in request");
    pos_ += nl + 1;
    state_ = State::idle;
    scanned_ = 0;
    for (const std::string& a : args_) args_bytes_ += a.size();
    got = !args_.empty();
    return Status::incomplete;
  }


  // ---- multibulk requests ----

  // Reads a length line ("*<n>\r" or "$<n>\r" plus one more byte). Returns incomplete with
  // `ready` false when the line is not all there yet.
  Status read_length_line(const char* too_big, bool& ready, std::string_view& digits, char& first) {
    ready = false;
    bool nul = false;
    const std::size_t cr = find_terminator('\r', nul);
    if (nul && limits_.strict) return fail("a NUL byte in a length line");
    if (cr == std::string::npos || nul) {
      if (nul) scanned_ = cr;
      if (buf_.size() - pos_ > limits_.max_inline) return fail(too_big);
      return Status::incomplete;
    }
    // The byte after '\r' must have arrived too (Redis does not check that it is '\n').
    if (cr + 2 > buf_.size() - pos_) return Status::incomplete;
    if (limits_.strict && buf_[pos_ + cr + 1] != '\n') return fail("a length line not ended by CRLF");
    first = buf_[pos_];
    digits = std::string_view(buf_.data() + pos_ + 1, cr == 0 ? 0 : cr - 1);
    ready = true;
    line_len_ = cr + 2;
    return Status::incomplete;
  }

  Status parse_multibulk(bool& got) {
    if (state_ == State::multibulk_count) {
      bool ready = false;
      std::string_view digits;
      char first = 0;
      Status s = read_length_line("too big mbulk count string", ready, digits, first);
      if (!ready) return s;
      std::int64_t count = 0;
      if (!parse_int64(digits, count) || count > std::numeric_limits<int>::max()) {
        return fail("invalid multibulk length");
      }
      if (count > kUnauthMaxArgs && !limits_.authenticated) return fail("unauthenticated multibulk length");
      pos_ += line_len_;
      scanned_ = 0;
      if (count <= 0) {  // "*0" and "*-1": an empty request, skipped
        state_ = State::idle;
        return Status::incomplete;
      }
      remaining_ = static_cast<std::size_t>(count);
      args_.clear();
      args_.reserve(remaining_ < 1024 ? remaining_ : 1024);
      args_bytes_ = 0;
      state_ = State::bulk_len;
    }
    while (remaining_ > 0) {
      if (state_ == State::bulk_len) {
        bool ready = false;
        std::string_view digits;
        char first = 0;
        Status s = read_length_line("too big bulk count string", ready, digits, first);
        if (!ready) return s;
        if (first != '$') {
          // Redis writes the byte as is (%c), CR and LF as spaces.
          const char got_char = (first == '\r' || first == '\n') ? ' ' : first;
          return fail(std::string("expected '$', got '") + got_char + "'");
        }
        std::int64_t len = 0;
        if (!parse_int64(digits, len) || len < 0 ||
            static_cast<std::uint64_t>(len) > static_cast<std::uint64_t>(limits_.max_bulk_len)) {
          return fail("invalid bulk length");
        }
        if (len > kUnauthMaxBulk && !limits_.authenticated) return fail("unauthenticated bulk length");
        pos_ += line_len_;
        scanned_ = 0;
        bulk_len_ = static_cast<std::size_t>(len);
        state_ = State::bulk_data;
      }
      // state_ == bulk_data: the payload plus two bytes Redis skips unchecked.
      if (bulk_len_ >= kBigArg) {
        // A big argument is moved into its own string as it arrives (Redis's big-argument
        // path), so that the input buffer never holds all of it next to its copy. It grows
        // geometrically up to its announced length, never past what has arrived.
        if (!in_big_arg_) {
          args_.emplace_back();
          in_big_arg_ = true;
        }
        std::string& arg = args_.back();
        const std::size_t take = std::min(bulk_len_ - arg.size(), buf_.size() - pos_);
        if (arg.size() + take > arg.capacity()) {
          // A fresh string gets exactly the capacity asked (reserve() on a used one may round
          // it up to twice the old capacity, past the argument's length).
          std::string grown;
          grown.reserve(std::min(bulk_len_, std::max(arg.size() + take, 2 * arg.capacity())));
          grown.append(arg);
          arg.swap(grown);
        }
        arg.append(buf_.data() + pos_, take);
        pos_ += take;
        if (arg.size() < bulk_len_ || buf_.size() - pos_ < 2) return Status::incomplete;
        if (limits_.strict && !crlf_at(pos_)) return fail("a bulk not followed by CRLF");
        in_big_arg_ = false;
        args_bytes_ += arg.size();
        pos_ += 2;
      } else {
        if (buf_.size() - pos_ < bulk_len_ + 2) return Status::incomplete;
        if (limits_.strict && !crlf_at(pos_ + bulk_len_)) return fail("a bulk not followed by CRLF");
        args_.emplace_back(buf_.data() + pos_, bulk_len_);
        args_bytes_ += bulk_len_;
        pos_ += bulk_len_ + 2;
      }
      --remaining_;
      state_ = State::bulk_len;
    }
    state_ = State::idle;
    scanned_ = 0;
    got = true;
    return Status::incomplete;
  }

  ParserLimits limits_{};
  std::string buf_;
  std::size_t pos_ = 0;      // start of unparsed input
  std::size_t scanned_ = 0;  // bytes of the current line already searched for a terminator
  std::size_t line_len_ = 0;
  State state_ = State::idle;
  std::size_t remaining_ = 0;  // bulk arguments still expected
  std::size_t bulk_len_ = 0;
  std::vector<std::string> args_;
  std::size_t args_bytes_ = 0;
  bool in_big_arg_ = false;  // args_.back() is a big argument still arriving
  std::string error_;
  bool crlf_at(std::size_t at) const noexcept { return buf_[at] == '\r' && buf_[at + 1] == '\n'; }

  static constexpr std::size_t kBigArg = 32 * 1024;         // Redis PROTO_MBULK_BIG_ARG
  static constexpr std::int64_t kUnauthMaxArgs = 10;        // Redis: before AUTH
  static constexpr std::int64_t kUnauthMaxBulk = 16384;
  static constexpr std::size_t kKeepCapacity = 64 * 1024;   // input buffer kept between requests
};

}  // namespace expiring::redis
