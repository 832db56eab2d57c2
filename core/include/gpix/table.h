#pragma once
// gpix::Table: a filter's table result (reductions, histograms, label statistics) and the
// UI's label measurements. Named float64 columns stored column by column in one buffer, so
// that a table of a million labels is one allocation filled in one pass, a column is a
// contiguous span (sorting, plotting, CSV), and a row is a cheap view (no per-row vector).
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpix {

namespace detail {
// std::allocator whose value-initialisation leaves doubles unset: a table built for overwrite
// is written once by its producer, not zeroed first (a second pass over tens of MB for a
// million-row table).
// Large tables (a million labels: 40 MB) and the buffers label_statistics pulls them from
// are placed on transparent huge pages where the system offers them on request (Linux), so
// that their first touch costs tens of page faults, not ten thousand: that was most of a
// million-label label_statistics on the host (bench/bench_table.cpp).
void* allocate_table_bytes(std::size_t bytes);
void free_table_bytes(void* p, std::size_t bytes) noexcept;

template <class T>
struct ForOverwriteAllocator : std::allocator<T> {
  using value_type = T;
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_table_bytes(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { free_table_bytes(p, n * sizeof(T)); }
  template <class U>
  struct rebind {
    using other = ForOverwriteAllocator<U>;
  };
  ForOverwriteAllocator() = default;
  template <class U>
  explicit ForOverwriteAllocator(const ForOverwriteAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
}  // namespace detail

class Table {
 public:
  // One row: a view into its table (valid while the table lives and keeps its shape).
  class Row {
   public:
    class iterator {
     public:
      using value_type = double;
      using difference_type = std::ptrdiff_t;
      iterator() = default;
      double operator*() const noexcept { return *p_; }
      iterator& operator++() noexcept {
        p_ += stride_;
        return *this;
      }
      iterator operator++(int) noexcept {
        iterator old = *this;
        p_ += stride_;
        return old;
      }
      bool operator==(const iterator& o) const noexcept { return p_ == o.p_; }

     private:
      friend class Row;
      iterator(const double* p, std::size_t stride) : p_(p), stride_(stride) {}
      const double* p_ = nullptr;
      std::size_t stride_ = 0;
    };

    std::size_t size() const noexcept { return table_->width(); }
    double operator[](std::size_t column) const noexcept {
      return table_->data_[column * table_->stride_ + row_];
    }
    // The value in the named column; throws InvalidArgument naming the columns there are.
    double operator[](std::string_view column) const {
      return (*this)[table_->column_index(column)];
    }
    iterator begin() const noexcept { return {table_->data_.data() + row_, table_->stride_}; }
    iterator end() const noexcept {
      return {table_->data_.data() + row_ + size() * table_->stride_, table_->stride_};
    }
    // The row's values in column order, as a vector (a copy).
    std::vector<double> values() const;

   private:
    friend class Table;
    Row(const Table* t, std::size_t r) : table_(t), row_(r) {}
    const Table* table_;
    std::size_t row_;
  };

  // A list of column names that tables can share: copying a table, or making the same table
  // on every call from one list kept by its producer, then allocates nothing for the names.
  using Columns = std::shared_ptr<const std::vector<std::string>>;
  static Columns shared_columns(std::vector<std::string> names);

  Table() = default;
  // Copies hold the rows only (not the spare capacity) and share the column names.
  Table(const Table& other);
  Table& operator=(const Table& other);
  // Moves leave the source an empty table (no columns, no rows).
  Table(Table&& other) noexcept;
  Table& operator=(Table&& other) noexcept;
  ~Table() = default;
  // `rows` rows of the named columns, every value 0.
  explicit Table(std::vector<std::string> columns, std::size_t rows = 0);
  // A small table given row by row: Table({"min", "max"}, {{0, 255}}). Throws
  // InvalidArgument when a row's length differs from the number of columns.
  Table(std::vector<std::string> columns,
        std::initializer_list<std::initializer_list<double>> rows);
  // `rows` rows whose values are left unset, for a producer that writes every value of every
  // column (through column(c)) before anyone reads them.
  static Table for_overwrite(std::vector<std::string> columns, std::size_t rows);
  static Table for_overwrite(Columns columns, std::size_t rows);

  const std::vector<std::string>& columns() const noexcept;
  std::size_t size() const noexcept { return rows_; }  // rows
  bool empty() const noexcept { return rows_ == 0; }
  std::size_t width() const noexcept { return columns_ ? columns_->size() : 0; }  // columns

  // The index of a column; throws InvalidArgument naming the columns there are.
  std::size_t column_index(std::string_view name) const;
  bool has_column(std::string_view name) const noexcept;
  // A column's values, one per row, contiguous.
  std::span<const double> column(std::size_t c) const noexcept {
    return {data_.data() + c * stride_, rows_};
  }
  std::span<double> column(std::size_t c) noexcept { return {data_.data() + c * stride_, rows_}; }
  std::span<const double> column(std::string_view name) const { return column(column_index(name)); }
  std::span<double> column(std::string_view name) { return column(column_index(name)); }

  Row row(std::size_t r) const noexcept { return {this, r}; }
  double operator()(std::size_t r, std::size_t c) const noexcept { return data_[c * stride_ + r]; }
  double& operator()(std::size_t r, std::size_t c) noexcept { return data_[c * stride_ + r]; }

  // Appends a row (amortised: the buffer grows geometrically). Throws InvalidArgument when
  // its length differs from the number of columns.
  void push_back(std::span<const double> row);
  void push_back(std::initializer_list<double> row) {
    push_back(std::span<const double>(row.begin(), row.size()));
  }
  void reserve(std::size_t rows);
  // The given rows, in the given order (filtering and sorting), each column gathered in one
  // pass. Throws InvalidArgument for an index >= size().
  Table select(std::span<const std::size_t> rows) const;

  // Same columns and values (NaN unequal to NaN, as for doubles).
  friend bool operator==(const Table& a, const Table& b);

 private:
  void regrow(std::size_t capacity);

  Columns columns_;  // null: no columns
  // Column c's row r at data_[c * stride_ + r]; stride_ is the row capacity.
  std::vector<double, detail::ForOverwriteAllocator<double>> data_;
  std::size_t rows_ = 0;
  std::size_t stride_ = 0;
};

}  // namespace gpix
