// The data-only pickle reader (see pickle.hpp). Opcode numbers and layouts: CPython's Lib/pickletools.py.
#include "core/pickle.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace gsq {

namespace {

constexpr size_t kMaxMarks = 10000;  // open MARKs at once
constexpr size_t kMaxDepth = 1000;   // containers inside containers (a snapshot nests about six deep)

// Opcodes that import or call: a data snapshot never needs them, and executing them is how pickles run code.
const char* refused_name(uint8_t op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    default:
      return nullptr;
  }
}

class Parser {
 public:
  Parser(std::string_view b, std::string_view origin) : b_(b), origin_(origin) {}

  // Any failure first empties every container made so far: a hostile pickle may have built a list that contains
  // itself (through the memo), which shared ownership alone would never free.
  PyValue run() {
    try {
      PyValue v = read_all();
      check_shape(v);
      containers_.clear();
      return v;
    } catch (...) {
      for (auto& c : containers_) {
        if (c.items) c.items->clear();
        if (c.entries) c.entries->clear();
      }
      throw;
    }
  }

 private:
  PyValue read_all() {
    while (true) {
      if (pos_ >= b_.size()) fail("the file ends before the pickle's STOP opcode");
      const size_t at = pos_;
      const uint8_t op = u8();
      if (const char* name = refused_name(op))
        fail_at(at, fmt::format("opcode {} imports or calls Python code; only plain data (dicts, lists, tuples, "
                                "strings, numbers, booleans, None) is read, never executed",
                                name));
      if (op == '.') break;  // STOP
      step(op, at);
    }
    if (stack_.size() != 1 || !marks_.empty()) fail("the pickle does not leave exactly one value");
    PyValue v = std::move(stack_.back());
    stack_.clear();
    memo_.clear();
    return v;
  }

  // Refuses a value that contains itself and nesting deeper than kMaxDepth, walking each container once (shared ones
  // are not walked again) without recursion.
  void check_shape(const PyValue& root) const {
    enum : uint8_t { open = 1, done = 2 };
    std::unordered_map<const void*, uint8_t> state;
    struct Frame {
      const PyValue* v;
      size_t next;
    };
    std::vector<Frame> path;
    auto key = [](const PyValue& v) -> const void* {
      return v.items ? static_cast<const void*>(v.items.get()) : static_cast<const void*>(v.entries.get());
    };
    auto children = [](const PyValue& v) { return v.items ? v.items->size() : v.entries ? 2 * v.entries->size() : 0; };
    auto child = [](const PyValue& v, size_t i) -> const PyValue& {
      if (v.items) return (*v.items)[i];
      return i % 2 ? (*v.entries)[i / 2].second : (*v.entries)[i / 2].first;
    };
    auto enter = [&](const PyValue& v) {
      if (!v.items && !v.entries) return;
      auto [it, fresh] = state.try_emplace(key(v), open);
      if (!fresh) {
        if (it->second == open) fail("a container that contains itself");
        return;
      }
      if (path.size() >= kMaxDepth) fail("containers nested deeper than 1,000");
      path.push_back({&v, 0});
    };
    enter(root);
    while (!path.empty()) {
      Frame& f = path.back();
      if (f.next < children(*f.v)) {
        enter(child(*f.v, f.next++));
      } else {
        state[key(*f.v)] = done;
        path.pop_back();
      }
    }
  }
  [[noreturn]] void fail_at(size_t at, const std::string& why) const {
    throw_bad_input(fmt::format("{}: not a readable pickle at byte {}: {}", origin_, at, why));
  }
  [[noreturn]] void fail(const std::string& why) const { fail_at(pos_, why); }

  const char* take(size_t n) {
    if (n > b_.size() - pos_) fail(fmt::format("truncated: {} more bytes expected, {} left", n, b_.size() - pos_));
    const char* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint8_t u8() { return static_cast<uint8_t>(*take(1)); }
  template <class T>
  T le() {
    T v{};
    std::memcpy(&v, take(sizeof v), sizeof v);  // pickles are little-endian, as is every host this runs on
    return v;
  }
  std::string_view line() {
    const size_t end = b_.find('\n', pos_);
    if (end == std::string_view::npos) fail("truncated: a text argument without its newline");
    const std::string_view s = b_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  void push(PyValue v) {
    if (stack_.size() >= (1u << 24)) fail("more than 16 Mi values on the stack");
    stack_.push_back(std::move(v));
  }
  PyValue pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("a value was expected on the stack");
    PyValue v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  PyValue& top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("a value was expected on the stack");
    return stack_.back();
  }
  // The values since the last MARK, removed from the stack (the mark too).
  std::vector<PyValue> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PyValue> out(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(m)),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return out;
  }

  static PyValue make_int(int64_t v) {
    PyValue p;
    p.type = PyValue::Type::integer;
    p.integer = v;
    return p;
  }
  static PyValue make_text(PyValue::Type t, std::string_view s) {
    PyValue p;
    p.type = t;
    p.text = std::make_shared<std::string>(s);
    return p;
  }
  PyValue make_seq(PyValue::Type t, std::vector<PyValue> items) {
    PyValue p;
    p.type = t;
    p.items = std::make_shared<PyList>(std::move(items));
    containers_.push_back(p);
    return p;
  }
  PyValue make_dict() {
    PyValue p;
    p.type = PyValue::Type::dict;
    p.entries = std::make_shared<PyDict>();
    containers_.push_back(p);
    return p;
  }

  // Two's complement, little-endian, as LONG1/LONG4 encode it.
  PyValue long_bytes(size_t n) {
    if (n > 8) fail(fmt::format("an integer of {} bytes: beyond the 64 bits any snapshot field needs", n));
    const auto* p = reinterpret_cast<const uint8_t*>(take(n));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
    if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    return make_int(static_cast<int64_t>(v));
  }

  void memo_put(uint64_t key) {
    if (key > (1u << 26)) fail("memo index out of range");
    memo_[key] = top();
  }
  void memo_get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail(fmt::format("memo entry {} used before it was stored", key));
    push(it->second);
  }

  void add_items(PyValue& target, std::vector<PyValue> items) {
    if (target.type != PyValue::Type::list) fail(fmt::format("APPENDS to a {}", target.type_name()));
    for (auto& v : items) target.items->push_back(std::move(v));
  }
  void set_items(PyValue& target, std::vector<PyValue> kv) {
    if (target.type != PyValue::Type::dict) fail(fmt::format("SETITEMS on a {}", target.type_name()));
    if (kv.size() % 2) fail("SETITEMS with an odd number of values");
    for (size_t i = 0; i < kv.size(); i += 2) target.entries->emplace_back(std::move(kv[i]), std::move(kv[i + 1]));
  }

  // The protocol and framing opcodes, and the stack's own: MARK, POP, POP_MARK, DUP.
  bool framing_op(uint8_t op) {
    switch (op) {
      case 0x80:
        u8();
        return true;  // PROTO
      case 0x95:
        (void)le<uint64_t>();
        return true;  // FRAME: a length hint only
      case '(':       // MARK
        if (marks_.size() >= kMaxMarks) fail("more than 10,000 open MARKs");
        marks_.push_back(stack_.size());
        return true;
      case '0':
        (void)pop();
        return true;  // POP
      case '1':
        (void)pop_mark();
        return true;  // POP_MARK
      case '2':
        push(top());
        return true;  // DUP
      default:
        return false;
    }
  }

  // None, booleans, integers and floats (binary, and protocol 0's text forms).
  bool scalar_op(uint8_t op, size_t at) {
    using T = PyValue::Type;
    switch (op) {
      case 'N':
        push(PyValue{});
        return true;  // NONE
      case 0x88:      // NEWTRUE
      case 0x89: {    // NEWFALSE
        PyValue v;
        v.type = T::boolean;
        v.boolean = op == 0x88;
        push(std::move(v));
        return true;
      }
      case 'J':
        push(make_int(le<int32_t>()));
        return true;  // BININT
      case 'K':
        push(make_int(u8()));
        return true;  // BININT1
      case 'M':
        push(make_int(le<uint16_t>()));
        return true;  // BININT2
      case 0x8a:
        push(long_bytes(u8()));
        return true;  // LONG1
      case 0x8b: {    // LONG4
        const int32_t n = le<int32_t>();
        if (n < 0) fail("negative LONG4 length");
        push(long_bytes(static_cast<size_t>(n)));
        return true;
      }
      case 'I':    // INT (protocol 0 text; "01"/"00" are booleans)
      case 'L': {  // LONG (text, optional trailing L)
        std::string s(line());
        if (op == 'I' && (s == "01" || s == "00")) {
          PyValue v;
          v.type = T::boolean;
          v.boolean = s == "01";
          push(std::move(v));
          return true;
        }
        if (!s.empty() && s.back() == 'L') s.pop_back();
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || *end != '\0' || errno == ERANGE) fail_at(at, "an integer that does not fit 64 bits");
        push(make_int(v));
        return true;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE 754
        const auto* p = reinterpret_cast<const uint8_t*>(take(8));
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
        PyValue v;
        v.type = T::floating;
        std::memcpy(&v.floating, &bits, sizeof bits);
        push(std::move(v));
        return true;
      }
      case 'F': {  // FLOAT (text)
        const std::string s(line());
        PyValue v;
        v.type = T::floating;
        v.floating = std::strtod(s.c_str(), nullptr);
        push(std::move(v));
        return true;
      }
      default:
        return false;
    }
  }

  // Strings and bytes, every length prefix.
  bool text_op(uint8_t op) {
    using T = PyValue::Type;
    switch (op) {
      case 0x8c: {
        const size_t n = u8();
        push(make_text(T::string, {take(n), n}));
        return true;
      }  // SHORT_BINUNICODE
      case 'X': {
        const size_t n = le<uint32_t>();
        push(make_text(T::string, {take(n), n}));
        return true;
      }             // BINUNICODE
      case 0x8d: {  // BINUNICODE8
        const uint64_t n = le<uint64_t>();
        if (n > b_.size()) fail("string longer than the file");
        push(make_text(T::string, {take(n), n}));
        return true;
      }
      case 'V':
        push(make_text(T::string, line()));
        return true;  // UNICODE (raw-unicode-escape; kept as written)
      case 'S':
        push(make_text(T::string, line()));
        return true;  // STRING (quoted repr; kept as written)
      case 'C': {
        const size_t n = u8();
        push(make_text(T::bytes, {take(n), n}));
        return true;
      }  // SHORT_BINBYTES
      case 'B': {
        const size_t n = le<uint32_t>();
        push(make_text(T::bytes, {take(n), n}));
        return true;
      }             // BINBYTES
      case 0x8e: {  // BINBYTES8
        const uint64_t n = le<uint64_t>();
        if (n > b_.size()) fail("bytes longer than the file");
        push(make_text(T::bytes, {take(n), n}));
        return true;
      }
      case 'U': {
        const size_t n = u8();
        push(make_text(T::string, {take(n), n}));
        return true;
      }            // SHORT_BINSTRING
      case 'T': {  // BINSTRING
        const int32_t n = le<int32_t>();
        if (n < 0) fail("negative BINSTRING length");
        push(make_text(T::string, {take(static_cast<size_t>(n)), static_cast<size_t>(n)}));
        return true;
      }
      default:
        return false;
    }
  }

  // Lists, tuples, dicts and sets (sets read as lists), and what fills them.
  bool container_op(uint8_t op) {
    using T = PyValue::Type;
    switch (op) {
      case ']':
        push(make_seq(T::list, {}));
        return true;  // EMPTY_LIST
      case ')':
        push(make_seq(T::tuple, {}));
        return true;  // EMPTY_TUPLE
      case '}':
        push(make_dict());
        return true;  // EMPTY_DICT
      case 0x8f:
        push(make_seq(T::list, {}));
        return true;  // EMPTY_SET: read as a list
      case 'l':
        push(make_seq(T::list, pop_mark()));
        return true;  // LIST
      case 't':
        push(make_seq(T::tuple, pop_mark()));
        return true;  // TUPLE
      case 0x91:
        push(make_seq(T::list, pop_mark()));
        return true;  // FROZENSET: read as a list
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
        const size_t n = op - 0x84u;
        std::vector<PyValue> items(n);
        for (size_t i = n; i-- > 0;) items[i] = pop();
        push(make_seq(T::tuple, std::move(items)));
        return true;
      }
      case 'd': {  // DICT
        PyValue d = make_dict();
        set_items(d, pop_mark());
        push(std::move(d));
        return true;
      }
      case 'a': {  // APPEND
        PyValue v = pop();
        add_items(top(), {std::move(v)});
        return true;
      }
      case 'e': {  // APPENDS
        auto items = pop_mark();
        add_items(top(), std::move(items));
        return true;
      }
      case 0x90: {  // ADDITEMS (to a set, read as a list)
        auto items = pop_mark();
        add_items(top(), std::move(items));
        return true;
      }
      case 's': {  // SETITEM
        PyValue v = pop(), k = pop();
        std::vector<PyValue> kv;
        kv.push_back(std::move(k));
        kv.push_back(std::move(v));
        set_items(top(), std::move(kv));
        return true;
      }
      case 'u': {  // SETITEMS
        auto kv = pop_mark();
        set_items(top(), std::move(kv));
        return true;
      }
      default:
        return false;
    }
  }

  // The memo: PUT and GET in their three widths, MEMOIZE.
  bool memo_op(uint8_t op) {
    switch (op) {
      case 'p':
        memo_put(std::strtoull(std::string(line()).c_str(), nullptr, 10));
        return true;  // PUT
      case 'q':
        memo_put(u8());
        return true;  // BINPUT
      case 'r':
        memo_put(le<uint32_t>());
        return true;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        return true;  // MEMOIZE
      case 'g':
        memo_get(std::strtoull(std::string(line()).c_str(), nullptr, 10));
        return true;  // GET
      case 'h':
        memo_get(u8());
        return true;  // BINGET
      case 'j':
        memo_get(le<uint32_t>());
        return true;  // LONG_BINGET
      default:
        return false;
    }
  }

  // One opcode at `at`: each family in its own method; an opcode none knows is refused.
  void step(uint8_t op, size_t at) {
    if (framing_op(op) || scalar_op(op, at) || text_op(op) || container_op(op) || memo_op(op)) return;
    fail_at(at, fmt::format("unknown opcode 0x{:02x}", op));
  }

  std::string_view b_;
  std::string_view origin_;
  size_t pos_ = 0;
  std::vector<PyValue> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyValue> memo_;
  std::vector<PyValue> containers_;  // every container made, to break cycles on failure
};

}  // namespace

PyValue parse_pickle(std::string_view bytes, std::string_view origin) {
  return Parser(bytes, origin).run();
}

}  // namespace gsq
