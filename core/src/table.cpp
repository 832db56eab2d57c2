#include "gpix/table.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

#include "gpix/error.h"
#include "recycling.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gpix {

namespace detail {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Below this a table stays on ordinary pages (most tables: a reduction's one value).
constexpr std::size_t kHugeFrom = std::size_t{4} << 20;
}  // namespace

void* allocate_table_bytes(std::size_t bytes) {
#if defined(__linux__)
  if (bytes >= kHugeFrom) {
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    if (void* p = std::aligned_alloc(kHugePage, rounded)) {
      // Advice only: where huge pages are off or short, the pages are ordinary ones.
      (void)madvise(p, rounded, MADV_HUGEPAGE);
      return p;
    }
    throw std::bad_alloc();
  }
#endif
  // A reduction's one-row table and a histogram's bins come and go with every call: recycled.
  if (FreeBlocks* f = FreeBlocks::of(bytes)) return f->pop();
  return ::operator new(bytes);
}

void free_table_bytes(void* p, std::size_t bytes) noexcept {
#if defined(__linux__)
  if (bytes >= kHugeFrom) {
    std::free(p);
    return;
  }
#endif
  if (FreeBlocks* f = FreeBlocks::of(bytes)) return f->push(p);
  ::operator delete(p);
}

}  // namespace detail

std::vector<double> Table::Row::values() const {
  return {begin(), end()};
}

Table::Columns Table::shared_columns(std::vector<std::string> names) {
  return std::make_shared<const std::vector<std::string>>(std::move(names));
}

const std::vector<std::string>& Table::columns() const noexcept {
  static const std::vector<std::string> none;
  return columns_ ? *columns_ : none;
}

Table::Table(const Table& other)
    : columns_(other.columns_), rows_(other.rows_), stride_(other.rows_) {
  data_.resize(width() * rows_);
  for (std::size_t c = 0; c < width(); ++c) {
    const std::span<const double> from = other.column(c);
    std::copy(from.begin(), from.end(), data_.data() + c * stride_);
  }
}

Table::Table(Table&& other) noexcept
    : columns_(std::move(other.columns_)),
      data_(std::move(other.data_)),
      rows_(std::exchange(other.rows_, 0)),
      stride_(std::exchange(other.stride_, 0)) {
  other.columns_.reset();
  other.data_.clear();
}

Table& Table::operator=(Table&& other) noexcept {
  if (this != &other) {
    columns_ = std::move(other.columns_);
    data_ = std::move(other.data_);
    rows_ = std::exchange(other.rows_, 0);
    stride_ = std::exchange(other.stride_, 0);
    other.columns_.reset();
    other.data_.clear();
  }
  return *this;
}

Table& Table::operator=(const Table& other) {
  if (this != &other) *this = Table(other);
  return *this;
}

Table::Table(std::vector<std::string> columns, std::size_t rows)
    : columns_(shared_columns(std::move(columns))) {
  data_.assign(width() * rows, 0.0);
  rows_ = stride_ = rows;
}

Table::Table(std::vector<std::string> columns,
             std::initializer_list<std::initializer_list<double>> rows)
    : columns_(shared_columns(std::move(columns))) {
  reserve(rows.size());
  for (const auto& r : rows) push_back(r);
}

Table Table::for_overwrite(std::vector<std::string> columns, std::size_t rows) {
  return for_overwrite(shared_columns(std::move(columns)), rows);
}

Table Table::for_overwrite(Columns columns, std::size_t rows) {
  Table t;
  t.columns_ = std::move(columns);
  t.data_.resize(t.width() * rows);  // default-initialised: left unset
  t.rows_ = t.stride_ = rows;
  return t;
}

std::size_t Table::column_index(std::string_view name) const {
  const std::vector<std::string>& names = columns();
  for (std::size_t c = 0; c < names.size(); ++c) {
    if (names[c] == name) return c;
  }
  std::string there;
  for (const std::string& c : names) there += (there.empty() ? "" : ", ") + c;
  throw InvalidArgument("table has no column \"" + std::string(name) +
                        "\"; its columns are: " + (there.empty() ? std::string("(none)") : there));
}

bool Table::has_column(std::string_view name) const noexcept {
  const std::vector<std::string>& names = columns();
  return std::find(names.begin(), names.end(), name) != names.end();
}

void Table::regrow(std::size_t capacity) {
  std::vector<double, detail::ForOverwriteAllocator<double>> grown(width() * capacity);
  for (std::size_t c = 0; c < width(); ++c) {
    const double* from = data_.data() + c * stride_;
    std::copy(from, from + rows_, grown.data() + c * capacity);
  }
  data_ = std::move(grown);
  stride_ = capacity;
}

void Table::reserve(std::size_t rows) {
  if (rows > stride_) regrow(rows);
}

void Table::push_back(std::span<const double> row) {
  if (row.size() != width()) {
    throw InvalidArgument("Table::push_back: a row of " + std::to_string(row.size()) +
                          " values for a table of " + std::to_string(width()) +
                          " columns (give one value per column)");
  }
  if (rows_ == stride_) regrow(std::max<std::size_t>(8, 2 * stride_));
  for (std::size_t c = 0; c < row.size(); ++c) data_[c * stride_ + rows_] = row[c];
  ++rows_;
}

Table Table::select(std::span<const std::size_t> rows) const {
  for (std::size_t r : rows) {
    if (r >= rows_) {
      throw InvalidArgument("Table::select: row " + std::to_string(r) + " of a table of " +
                            std::to_string(rows_) + " rows (rows are 0.." + std::to_string(rows_) +
                            "-1)");
    }
  }
  Table t = for_overwrite(columns_, rows.size());
  for (std::size_t c = 0; c < width(); ++c) {
    const double* from = data_.data() + c * stride_;
    double* to = t.data_.data() + c * t.stride_;
    for (std::size_t i = 0; i < rows.size(); ++i) to[i] = from[rows[i]];
  }
  return t;
}

bool operator==(const Table& a, const Table& b) {
  if (a.columns() != b.columns() || a.rows_ != b.rows_) return false;
  for (std::size_t c = 0; c < a.width(); ++c) {
    const std::span<const double> x = a.column(c), y = b.column(c);
    if (!std::equal(x.begin(), x.end(), y.begin())) return false;
  }
  return true;
}

}  // namespace gpix
