// Profile reading and writing (toml++, header-only), and the catalogue of the settings `tune` knows.
#define TOML_HEADER_ONLY 1
#define TOML_ENABLE_FORMATTERS 1
#include "tune/profile.hpp"

#include "tune/catalogue.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

namespace gsq::tune {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_at(const toml::source_region& where, const std::string& what) {
  throw_bad_input(
      fmt::format("{}:{}:{}: {}", where.path ? *where.path : "profile", where.begin.line, where.begin.column, what));
}

std::string origin_of(const toml::node& n) {
  const auto& s = n.source();
  return fmt::format("{}:{}:{}", s.path ? *s.path : "profile", s.begin.line, s.begin.column);
}

const Known* find_known(const std::string& group, const std::string& key) {
  for (const auto& k : known())
    if (group == k.group && key == k.key) return &k;
  return nullptr;
}

std::string number_text(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:g}", v);
}

// Splits "a:1,b:[x:1,y:2]" at the commas outside brackets.
void check_env(const std::string& name, const std::string& value, const toml::node& at) {
  if (const auto why = env_problem(name, value); !why.empty()) fail_at(at.source(), why);
}

Setting make_setting(const std::string& group, const std::string& selector, const std::string& key,
                     const toml::node& v) {
  // Setting ids are dotted paths: a key is a name (a quoted key with dots or spaces could not be written back).
  const auto name = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
  if (name.empty() ||
      std::any_of(name.begin(), name.end(),
                  [](char ch) {
                    return !((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                             ch == '_');
                  }) ||
      (group == "module" && key.find('.') != key.rfind('.')))
    fail_at(v.source(), fmt::format("[{}] '{}': a setting's name is letters, digits and _", group, key));
  const std::string where = group == "gpu" ? "gpu." + selector + "." + key : group + "." + key;
  const std::string display = group == "gpu" ? (selector == "*" ? "gpu." + key : where) : where;
  if (const auto r = rejected().find(group + "." + key); r != rejected().end())
    fail_at(v.source(), fmt::format("{}: {}", display, r->second));
  Setting s{where, "", ValueKind::text, origin_of(v)};
  if (group == "module") {  // module.nvidia.NAME: checked against the loaded driver's parameters when applied
    if (auto i = v.value_exact<int64_t>()) {
      s.kind = ValueKind::integer;
      s.value = std::to_string(*i);
    } else if (auto t = v.value_exact<std::string>()) {
      s.value = *t;
    } else {
      fail_at(v.source(), fmt::format("{}: a module parameter is an integer or a string", display));
    }
    return s;
  }
  if (group == "env") {
    if (auto t = v.value_exact<std::string>())
      s.value = *t;
    else if (auto i = v.value_exact<int64_t>())
      s.value = std::to_string(*i);
    else
      fail_at(v.source(), fmt::format("{}: an environment value is a string", display));
    check_env(key, s.value, v);
    return s;
  }
  const Known* k = find_known(group, key);
  if (k == nullptr) {
    std::string names;
    for (const auto& x : known())
      if (group == x.group) names += fmt::format("{}{}", names.empty() ? "" : ", ", x.key);
    fail_at(v.source(), fmt::format("{}: unknown setting (known in [{}]: {})", display, group, names));
  }
  s.kind = k->kind;
  switch (k->kind) {
    case ValueKind::boolean:
      if (auto b = v.value_exact<bool>())
        s.value = *b ? "true" : "false";
      else
        fail_at(v.source(), fmt::format("{}: true or false", display));
      break;
    case ValueKind::integer:
      if (auto i = v.value_exact<int64_t>(); i && *i >= 0 && *i <= 3)
        s.value = std::to_string(*i);
      else
        fail_at(v.source(), fmt::format("{}: an integer 0-3", display));
      break;
    case ValueKind::number:
      if (auto d = v.value<double>(); d && *d > 0 && *d < 1e5)
        s.value = number_text(*d);
      else
        fail_at(v.source(), fmt::format("{}: a positive number of watts", display));
      break;
    case ValueKind::clock_pair: {
      const auto* a = v.as_array();
      if (a == nullptr || a->size() != 2 || !a->get(0)->value_exact<int64_t>() || !a->get(1)->value_exact<int64_t>())
        fail_at(v.source(), fmt::format("{}: [min, max] in MHz, e.g. [1980, 1980]", display));
      const auto lo = *a->get(0)->value_exact<int64_t>(), hi = *a->get(1)->value_exact<int64_t>();
      if (lo <= 0 || hi < lo || hi > 100000)
        fail_at(v.source(), fmt::format("{}: need 0 < min <= max (MHz), got [{}, {}]", display, lo, hi));
      s.value = fmt::format("{},{}", lo, hi);
      break;
    }
    case ValueKind::text: {
      std::string t;
      if (auto x = v.value_exact<std::string>())
        t = *x;
      else if (auto i = v.value_exact<int64_t>(); i && key == "compute_mode")
        t = std::to_string(*i);
      else
        fail_at(v.source(), fmt::format("{}: a string", display));
      if (key == "compute_mode") t = canonical_compute_mode(t);
      if (!k->words.empty() && std::find(k->words.begin(), k->words.end(), t) == k->words.end()) {
        std::string words;
        for (const auto& w : k->words) words += fmt::format("{}{}", words.empty() ? "" : ", ", w);
        fail_at(v.source(), fmt::format("{}: '{}' is not one of: {}", display, t, words));
      }
      s.value = t;
      break;
    }
  }
  return s;
}

// A file's [gpu] keys first, then its per-GPU tables over them (toml++ iterates keys in name order).
void read_gpu_table(const toml::table& t, const std::string& selector, Profile& p) {
  for (auto&& [k, v] : t)
    if (!v.is_table()) p.set(make_setting("gpu", selector, std::string(k.str()), v));
  for (auto&& [k, v] : t) {
    const std::string key(k.str());
    if (const auto* sub = v.as_table()) {
      if (selector != "*") fail_at(v.source(), fmt::format("gpu.{}.{}: GPU tables do not nest", selector, key));
      const bool index = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
      if (!index && key.rfind("GPU-", 0) != 0 && key.rfind("MIG-", 0) != 0)
        fail_at(v.source(), fmt::format("[gpu.{}]: a GPU is named by its index or its UUID (GPU-…)", key));
      read_gpu_table(*sub, key, p);
    }
  }
}

// TOML allows non-ASCII characters only inside strings and comments. toml++ 3.3 (Debian 12) reaches
// __builtin_unreachable on some of them elsewhere (U+00A1-U+0499, U+FB26-U+FEFE: found by the fuzzer), so the
// syntax error is reported here first, with its line and column.
void reject_non_ascii_outside_strings(const std::string& text, const std::string& origin) {
  size_t line = 1, col = 1;
  enum { code, comment, basic, literal, ml_basic, ml_literal } state = code;
  char last = '\n';  // the last character of code that is not a space: a quote opens a string only after one of =[{,.
  for (size_t i = 0; i < text.size(); ++i, ++col) {
    const char c = text[i];
    auto starts = [&](const char* s3) { return text.compare(i, 3, s3) == 0; };
    // A backslash escape is ASCII; in a multi-line string a line-ending backslash eats the whitespace that follows,
    // and the first character after it must be ASCII too (toml++ 3.3 tests it as whitespace).
    auto escape = [&](bool multiline) {
      size_t j = i + 1;
      if (multiline)
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n')) {
          if (text[j] == '\n') ++line, col = 0;
          ++j, ++col;
        }
      if (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x80)
        throw_bad_input(fmt::format("{}:{}:{}: a non-ASCII character after a backslash (escapes are ASCII: \\uXXXX)",
                                    origin, line, col + 1));
      col += j - i;
      i = j;
    };
    if (c == '\n') {
      ++line;
      col = 0;
      if (state == comment || state == basic || state == literal) state = code;
      if (state == code) last = '\n';
      continue;
    }
    switch (state) {
      case code: {
        if (static_cast<unsigned char>(c) >= 0x80)
          throw_bad_input(
              fmt::format("{}:{}:{}: a non-ASCII character outside a string or comment (TOML allows "
                          "none there: quote the key or the value)",
                          origin, line, col));
        const bool opens = last == '\n' || last == '=' || last == '[' || last == '{' || last == ',' || last == '.';
        if (c == '#') {
          state = comment;
        } else if ((c == '"' || c == '\'') && opens) {
          if (starts("\"\"\""))
            state = ml_basic, i += 2, col += 2;
          else if (starts("'''"))
            state = ml_literal, i += 2, col += 2;
          else
            state = c == '"' ? basic : literal;
        } else if (c != ' ' && c != '\t' && c != '\r') {
          last = c;
        }
        break;
      }
      case basic:
        if (c == '\\')
          escape(false);
        else if (c == '"')
          state = code, last = '"';
        break;
      case literal:
        if (c == '\'') state = code, last = '\'';
        break;
      case ml_basic:
        if (c == '\\')
          escape(true);
        else if (starts("\"\"\""))
          state = code, last = '"', i += 2, col += 2;
        break;
      case ml_literal:
        if (starts("'''")) state = code, last = '\'', i += 2, col += 2;
        break;
      case comment:
        break;
    }
  }
}

void read_into(const std::string& text, const std::string& origin, const fs::path& base_dir, Profile& p,
               std::vector<std::string>& stack) {
  reject_non_ascii_outside_strings(text, origin);
  if (stack.size() > 16) throw_bad_input(fmt::format("{}: includes nest deeper than 16 files", origin));
  toml::table root;
  try {
    // The scanner above is a heuristic; the sure test is the parser's: the text with every non-ASCII byte made '!' (a
    // character TOML allows only inside strings and comments, where any byte is safe for toml++) must parse first.
    if (std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      std::string ascii = text;
      for (char& c : ascii)
        if (static_cast<unsigned char>(c) >= 0x80) c = '!';
      (void)toml::parse(ascii, origin);
    }
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    fail_at(e.source(), std::string(e.description()));
  }
  stack.push_back(origin);
  if (const auto* main = root["main"].as_table()) {
    std::optional<std::string> summary;  // set after the includes: this file's summary wins
    for (auto&& [k, v] : *main) {
      const std::string key(k.str());
      if (key == "summary") {
        summary = v.value_exact<std::string>();
      } else if (key == "include") {
        std::vector<std::string> names;
        if (auto s = v.value_exact<std::string>()) {
          names.push_back(*s);
        } else if (const auto* a = v.as_array()) {
          for (const auto& e : *a)
            if (auto s2 = e.value_exact<std::string>()) names.push_back(*s2);
        } else {
          fail_at(v.source(), "main.include: a file name or a list of them");
        }
        for (const auto& name : names) {
          if (base_dir.empty()) fail_at(v.source(), "main.include: includes need a profile read from a file");
          const auto file = (base_dir / name).lexically_normal();
          if (std::find(stack.begin(), stack.end(), file.string()) != stack.end())
            fail_at(v.source(), fmt::format("main.include: {} includes itself", file.string()));
          p.files.push_back(file.string());
          read_into(read_text_file(file), file.string(), file.parent_path(), p, stack);
        }
      } else {
        fail_at(v.source(), fmt::format("main.{}: unknown (main takes summary and include)", key));
      }
    }
    if (summary) p.summary = *summary;
  }
  for (auto&& [g, node] : root) {
    const std::string group(g.str());
    if (group == "main") continue;
    const auto* t = node.as_table();
    if (t == nullptr)
      fail_at(node.source(), fmt::format("{}: settings go in tables ([gpu], [host], [module.nvidia], [env], "
                                         "[framework])",
                                         group));
    if (group == "gpu") {
      read_gpu_table(*t, "*", p);
    } else if (group == "module") {
      for (auto&& [m, sub] : *t) {
        const auto* mt = sub.as_table();
        if (m.str() != "nvidia" || mt == nullptr)
          fail_at(sub.source(), "[module]: only [module.nvidia] is managed (options nvidia … in modprobe.d)");
        for (auto&& [k, v] : *mt) {
          std::string key(k.str());
          if (key.rfind("NVreg_", 0) == 0) key = key.substr(6);
          p.set(make_setting("module", "", "nvidia." + key, v));
        }
      }
    } else if (group == "host" || group == "env" || group == "framework") {
      for (auto&& [k, v] : *t) p.set(make_setting(group, "", std::string(k.str()), v));
    } else if (group == "unsupported") {
      for (auto&& [k, v] : *t)
        if (auto s = v.value_exact<std::string>()) p.unsupported[std::string(k.str())] = *s;
    } else {
      fail_at(node.source(), fmt::format("[{}]: unknown group (groups: main, gpu, module.nvidia, host, env, "
                                         "framework, unsupported)",
                                         group));
    }
  }
  stack.pop_back();
}

}  // namespace

const Setting* Profile::find(const std::string& id) const {
  for (const auto& s : settings)
    if (s.id == id) return &s;
  return nullptr;
}

void Profile::set(Setting s) {
  if (s.id.rfind("gpu.*.", 0) == 0) {  // a later all-GPU key wins over the per-GPU ones before it (an include's)
    const auto key = s.key();
    settings.erase(std::remove_if(settings.begin(), settings.end(),
                                  [&](const Setting& x) { return x.group() == "gpu" && x.key() == key; }),
                   settings.end());
  }
  for (auto& x : settings)
    if (x.id == s.id) {
      x = std::move(s);
      return;
    }
  settings.push_back(std::move(s));
}

std::string canonical_compute_mode(const std::string& text) {
  if (text == "0" || text == "DEFAULT" || text == "Default") return "default";
  if (text == "1" || text == "EXCLUSIVE_PROCESS" || text == "Exclusive_Process") return "exclusive_process";
  if (text == "2" || text == "PROHIBITED" || text == "Prohibited") return "prohibited";
  if (text == "3" || text == "exclusive_thread" || text == "EXCLUSIVE_THREAD")
    throw_bad_input("compute_mode: exclusive_thread was removed from the driver; use exclusive_process");
  return text;
}

Profile parse_profile(const std::string& text, const std::string& origin, const fs::path& base_dir) {
  Profile p;
  p.files.push_back(origin);
  std::vector<std::string> stack;
  read_into(text, origin, base_dir, p, stack);
  return p;
}

Profile read_profile(const fs::path& file) {
  return parse_profile(read_text_file(file), file.string(), file.parent_path().empty() ? "." : file.parent_path());
}

std::string write_profile(const Profile& p, const std::string& header_comment) {
  toml::table root;
  auto table_for = [&](const std::vector<std::string>& path) -> toml::table& {
    toml::table* t = &root;
    for (const auto& part : path) {
      auto [it, fresh] = t->insert(part, toml::table{});
      t = it->second.as_table();
    }
    return *t;
  };
  for (const auto& s : p.settings) {
    const auto group = s.group();
    std::vector<std::string> path{group};
    if (group == "gpu") {
      const auto sel = s.id.substr(4, s.id.rfind('.') - 4);
      if (sel != "*") path.push_back(sel);
    } else if (group == "module") {
      path.push_back("nvidia");
    }
    auto& t = table_for(path);
    const auto key = s.key();
    switch (s.kind) {
      case ValueKind::boolean:
        t.insert_or_assign(key, s.value == "true");
        break;
      case ValueKind::integer:
        t.insert_or_assign(key, std::stoll(s.value));
        break;
      case ValueKind::number: {
        const double d = std::stod(s.value);
        if (std::floor(d) == d)
          t.insert_or_assign(key, static_cast<int64_t>(d));
        else
          t.insert_or_assign(key, d);
        break;
      }
      case ValueKind::clock_pair: {
        const auto comma = s.value.find(',');
        t.insert_or_assign(key,
                           toml::array{std::stoll(s.value.substr(0, comma)), std::stoll(s.value.substr(comma + 1))});
        break;
      }
      case ValueKind::text:
        t.insert_or_assign(key, s.value);
        break;
    }
  }
  if (!p.unsupported.empty()) {
    auto& t = table_for({"unsupported"});
    for (const auto& [id, why] : p.unsupported) t.insert_or_assign(id, why);
  }
  std::ostringstream out;
  std::istringstream lines(header_comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << '\n';
  if (!p.summary.empty()) out << '\n' << toml::table{{"main", toml::table{{"summary", p.summary}}}} << '\n';
  out << '\n' << root << '\n';
  return out.str();
}

}  // namespace gsq::tune
