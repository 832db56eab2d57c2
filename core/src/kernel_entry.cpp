#include "kernel_entry.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <utility>

#include "util.h"

namespace gpix::detail {
namespace {

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

struct Directive {
  std::size_t begin = 0, end = 0;  // [begin, end) in the text, line breaks included
  std::string text;                // continuations joined, comments left in
};

// The text with comments, string and character literals and directives blanked (spaces,
// line breaks kept), so that braces, parentheses and identifiers can be counted plainly; the
// directives are returned beside it.
std::string masked(std::string_view t, std::vector<Directive>& directives) {
  std::string m(t);
  const auto blank = [&](std::size_t a, std::size_t b) {
    for (std::size_t k = a; k < b && k < m.size(); ++k) {
      if (m[k] != '\n') m[k] = ' ';
    }
  };
  const auto skip_block_comment = [&](std::size_t i) {  // i at "/*"; returns past "*/"
    const std::size_t e = t.find("*/", i + 2);
    return e == std::string_view::npos ? t.size() : e + 2;
  };
  bool line_start = true;
  std::size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && (c == ' ' || c == '\t' || c == '\r')) {
      ++i;
      continue;
    }
    if (line_start && c == '#') {
      // A directive: to the end of its line, through backslash continuations and comments.
      Directive d;
      d.begin = i;
      std::size_t j = i;
      while (j < t.size()) {
        if (t.compare(j, 2, "/*") == 0) {
          j = skip_block_comment(j);
        } else if (t.compare(j, 2, "//") == 0) {
          while (j < t.size() && t[j] != '\n') ++j;
        } else if (t[j] == '\n') {
          std::size_t k = j;
          while (k > i && (t[k - 1] == '\r')) --k;
          if (k > i && t[k - 1] == '\\') {
            ++j;
            continue;
          }
          break;
        } else {
          ++j;
        }
      }
      d.end = j;
      for (std::size_t k = d.begin; k < d.end; ++k) {
        if (t[k] == '\\' && k + 1 < d.end && (t[k + 1] == '\n' || t[k + 1] == '\r')) continue;
        d.text += t[k] == '\n' || t[k] == '\r' ? ' ' : t[k];
      }
      blank(d.begin, d.end);
      directives.push_back(std::move(d));
      i = j;
      continue;
    }
    line_start = false;
    if (t.compare(i, 2, "/*") == 0) {
      const std::size_t e = skip_block_comment(i);
      blank(i, e);
      i = e;
    } else if (t.compare(i, 2, "//") == 0) {
      std::size_t e = i;
      while (e < t.size() && t[e] != '\n') ++e;
      blank(i, e);
      i = e;
    } else if (c == '"' || c == '\'') {
      std::size_t e = i + 1;
      while (e < t.size() && t[e] != c && t[e] != '\n') e += t[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, t.size());
      blank(i + 1, e - 1);
      i = e;
    } else {
      ++i;
    }
  }
  return m;
}

// A macro whose body defines kernels and nothing else that code outside it could use.
struct KernelMacro {
  std::vector<std::string> params;
  std::vector<std::string> patterns;  // "sep_##op##_x"
};

std::map<std::string, KernelMacro, std::less<>> kernel_macros(
    const std::vector<Directive>& directives) {
  std::map<std::string, KernelMacro, std::less<>> out;
  for (const Directive& d : directives) {
    std::string_view s = d.text;
    std::size_t p = 1;
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
    if (s.compare(p, 6, "define") != 0) continue;
    p += 6;
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
    const std::size_t name_begin = p;
    while (p < s.size() && ident_char(s[p])) ++p;
    if (p == name_begin || p >= s.size() || s[p] != '(') continue;  // not function-like
    const std::string name(s.substr(name_begin, p - name_begin));
    const std::size_t close = s.find(')', p);
    if (close == std::string_view::npos) continue;
    const std::string_view body = s.substr(close + 1);
    if (body.find("GPIX_KERNEL") == std::string_view::npos) continue;
    // Other definitions in the body (helpers a later kernel might call): leave its uses alone.
    if (body.find("GPIX_FUNC") != std::string_view::npos) continue;
    KernelMacro km;
    std::string_view params = s.substr(p + 1, close - p - 1);
    while (!params.empty()) {
      const std::size_t comma = params.find(',');
      km.params.push_back(trim(params.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      params.remove_prefix(comma + 1);
    }
    bool ok = true;
    for (std::size_t k = body.find("GPIX_KERNEL"); k != std::string_view::npos;
         k = body.find("GPIX_KERNEL", k + 1)) {
      const std::size_t paren = body.find('(', k);
      if (paren == std::string_view::npos) {
        ok = false;
        break;
      }
      std::size_t e = paren;
      while (e > k && body[e - 1] == ' ') --e;
      std::size_t b = e;
      while (b > k && (ident_char(body[b - 1]) || body[b - 1] == '#')) --b;
      if (b == e) {
        ok = false;
        break;
      }
      km.patterns.emplace_back(body.substr(b, e - b));
    }
    if (ok && !km.patterns.empty()) out.emplace(name, std::move(km));
  }
  return out;
}

// "sep_##op##_x" with op = conv: "sep_conv_x". Pieces between ## that name a parameter take
// its argument.
std::string expand(const KernelMacro& km, const std::string& pattern,
                   const std::vector<std::string>& args) {
  std::string out;
  std::size_t p = 0;
  while (p <= pattern.size()) {
    const std::size_t h = pattern.find("##", p);
    const std::string piece = pattern.substr(p, h == std::string::npos ? std::string::npos : h - p);
    std::string value = piece;
    for (std::size_t k = 0; k < km.params.size() && k < args.size(); ++k) {
      if (km.params[k] == piece) value = args[k];
    }
    out += value;
    if (h == std::string::npos) break;
    p = h + 2;
  }
  return out;
}

struct Removable {
  std::size_t begin = 0, end = 0;
  std::vector<std::string> names;  // the kernels it defines
  bool strippable = true;
};

std::size_t match(const std::string& m, std::size_t open, char o, char c) {
  int depth = 0;
  for (std::size_t k = open; k < m.size(); ++k) {
    if (m[k] == o) ++depth;
    if (m[k] == c && --depth == 0) return k;
  }
  return std::string::npos;
}

std::size_t skip_space(const std::string& m, std::size_t k) {
  while (k < m.size() && std::isspace(static_cast<unsigned char>(m[k])) != 0) ++k;
  return k;
}

std::vector<Removable> scan(std::string_view text) {
  std::vector<Directive> directives;
  const std::string m = masked(text, directives);
  const auto macros = kernel_macros(directives);
  const auto directive_inside = [&](std::size_t a, std::size_t b) {
    return std::any_of(directives.begin(), directives.end(),
                       [&](const Directive& d) { return d.begin > a && d.begin < b; });
  };
  std::vector<Removable> out;
  int depth = 0;
  std::size_t i = 0;
  while (i < m.size()) {
    const char c = m[i];
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (depth != 0 || !ident_char(c) || (i > 0 && ident_char(m[i - 1]))) {
      ++i;
      continue;
    }
    std::size_t e = i;
    while (e < m.size() && ident_char(m[e])) ++e;
    const std::string_view word(m.data() + i, e - i);
    if (word == "GPIX_KERNEL") {
      const std::size_t open = m.find('(', e);
      const std::size_t close = open == std::string::npos ? open : match(m, open, '(', ')');
      const std::size_t body = close == std::string::npos ? close : skip_space(m, close + 1);
      if (body >= m.size() || m[body] != '{') {  // a declaration, or not understood
        i = e;
        continue;
      }
      const std::size_t end = match(m, body, '{', '}');
      if (end == std::string::npos) break;
      std::size_t nb = open;
      while (nb > e && std::isspace(static_cast<unsigned char>(m[nb - 1])) != 0) --nb;
      std::size_t na = nb;
      while (na > e && ident_char(m[na - 1])) --na;
      Removable r;
      r.begin = i;
      r.end = end + 1;
      r.names.push_back(m.substr(na, nb - na));
      r.strippable = !directive_inside(body, end);
      out.push_back(std::move(r));
      i = end + 1;
      continue;
    }
    auto km = macros.find(word);
    const std::size_t open = skip_space(m, e);
    if (km != macros.end() && open < m.size() && m[open] == '(') {
      const std::size_t close = match(m, open, '(', ')');
      if (close == std::string::npos) break;
      std::vector<std::string> args;
      std::size_t a = open + 1;
      int inner = 0;
      for (std::size_t k = open + 1; k <= close; ++k) {
        if (m[k] == '(') ++inner;
        if ((m[k] == ',' && inner == 0) || k == close) {
          args.push_back(trim(std::string_view(m).substr(a, k - a)));
          a = k + 1;
        }
        if (m[k] == ')') --inner;
      }
      Removable r;
      r.begin = i;
      r.end = close + 1;
      const std::size_t semi = skip_space(m, r.end);
      if (semi < m.size() && m[semi] == ';') r.end = semi + 1;
      for (const std::string& p : km->second.patterns) {
        r.names.push_back(expand(km->second, p, args));
      }
      out.push_back(std::move(r));
      i = r.end;
      continue;
    }
    i = e;
  }
  return out;
}

}  // namespace

std::string single_entry_source(std::string_view text, std::string_view entry) {
  return entries_source(text, {std::string(entry)});
}

std::string entries_source(std::string_view text, const std::vector<std::string>& entries) {
  std::string out(text);
  for (const Removable& r : scan(text)) {
    if (!r.strippable) continue;
    const bool kept = std::any_of(r.names.begin(), r.names.end(), [&](const std::string& n) {
      return std::find(entries.begin(), entries.end(), n) != entries.end();
    });
    if (kept) continue;
    for (std::size_t k = r.begin; k < r.end; ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  }
  return out;
}

std::vector<std::vector<std::string>> program_groups(std::string_view text) {
  static constexpr std::string_view kMark = "gpix-program-group:";
  std::vector<std::vector<std::string>> groups;
  for (std::size_t at = text.find(kMark); at != std::string_view::npos;
       at = text.find(kMark, at + kMark.size())) {
    const std::size_t from = at + kMark.size();
    const std::size_t end = std::min(text.find("*/", from), text.find('\n', from));
    std::vector<std::string> names;
    std::size_t i = from;
    const std::size_t stop = std::min(end, text.size());
    while (i < stop) {
      while (i < stop && !ident_char(text[i])) ++i;
      std::size_t e = i;
      while (e < stop && ident_char(text[e])) ++e;
      if (e > i) names.emplace_back(text.substr(i, e - i));
      i = e;
    }
    if (names.size() > 1) groups.push_back(std::move(names));
  }
  return groups;
}

std::vector<std::string> recognised_entries(std::string_view text) {
  std::vector<std::string> names;
  for (const Removable& r : scan(text)) names.insert(names.end(), r.names.begin(), r.names.end());
  return names;
}

}  // namespace gpix::detail
