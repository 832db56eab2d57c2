#include "gpix/ui/stack_contrast.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "async.h"
#include "gpix/error.h"
#include "gpix/ui/render.h"
#include "gpix/ui/stack_file.h"
#include "pass_bar.h"
#include "stack_contrast_job.h"

namespace gpix::ui {

std::pair<double, double> contrast_from_histogram(std::span<const std::uint64_t> counts,
                                                  std::span<const double> edges, double mn,
                                                  double mx, bool integer, double low_percent,
                                                  double high_percent) {
  // Widen a flat range so it maps; relative to the value, as +1 vanishes beyond 2^53.
  const auto widen = [](double v) { return v + std::max(1.0, std::abs(v) * 1e-9); };
  if (!(mx > mn)) return {mn, widen(mn)};
  std::uint64_t total = 0;
  for (auto c : counts) total += c;
  if (total == 0 || edges.size() != counts.size() + 1) return {mn, mx};
  // The pixel of rank floor(p * (n - 1)) in sorted order, as the host percentiles did.
  const auto bin_of = [&](double pct) {
    const auto rank = static_cast<std::uint64_t>(std::clamp(pct / 100.0, 0.0, 1.0) *
                                                 static_cast<double>(total - 1));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      seen += counts[i];
      if (seen > rank) return i;
    }
    return counts.size() - 1;
  };
  double lo = edges[bin_of(low_percent)];
  double hi = edges[bin_of(high_percent) + 1];
  if (integer) {
    // Whole values inside the bins: exact when a bin is narrower than one.
    lo = std::ceil(lo);
    hi = std::min(mx, std::floor(hi));
  }
  lo = std::clamp(lo, mn, mx);
  hi = std::clamp(hi, mn, mx);
  if (!(hi > lo)) hi = widen(lo);
  return {lo, hi};
}

StackContrast stack_auto_contrast(const std::shared_ptr<const StackFile>& file,
                                  const gpix::Device& device, double low_percent,
                                  double high_percent, const std::atomic<bool>* cancel,
                                  const SlabProgress& progress) {
  StackHistogram h;
  try {
    h = stack_histogram(file, device, kContrastBins, cancel, progress);
  } catch (const InvalidArgument&) {
    // The histogram bins the stack's own range, which a stack of NaN only, or one reaching an
    // infinity, does not have; auto_contrast gives such an array in memory (0, 1), and so does
    // this. The statistics (the card's, often known already) tell that case from any other.
    if (!file->stats(device, cancel).finite_range()) return StackContrast{};
    throw;
  }
  StackContrast out;
  out.cached = h.cached;
  if (h.counts.empty()) return out;  // no finite pixel
  // The histogram's range is the stack's [min, max], except a flat stack's (max = min + 1, and
  // then every pixel is in the first bin: a stack that reaches min + 1 has pixels in the last):
  // its limits are the flat range widened, as auto_contrast gives a flat array.
  const bool flat = h.max - h.min == 1 && std::all_of(h.counts.begin() + 1, h.counts.end(),
                                                      [](std::uint64_t c) { return c == 0; });
  const double mx = flat ? h.min : h.max;
  std::tie(out.low, out.high) = contrast_from_histogram(
      h.counts, h.edges, h.min, mx, !is_float(file->dtype()), low_percent, high_percent);
  return out;
}

}  // namespace gpix::ui

namespace gpix::ui::detail {

void start_stack_auto_contrast(QObject* context, Workspace& host, int id, PassBar* bar,
                               std::function<void(double, double)> done,
                               std::function<void()> ended) {
  const Layer l = host.layer(id);
  const auto token = bar->start(QObject::tr("Automatic contrast of the whole stack"));
  run_async(
      context, long_pool(),
      [file = l.file, dev = host.device(), token]() {
        return stack_auto_contrast(file, dev, 0.5, 99.5, &token->cancel,
                                   PassToken::progress_of(token));
      },
      [&host, id, bar, token, file = std::weak_ptr<const StackFile>(l.file), done = std::move(done),
       ended = std::move(ended)](const Outcome<StackContrast>& out) {
        if (ended) ended();
        if (!out.value) {
          if (!token->cancel) {
            bar->finish(token, QObject::tr("No automatic contrast: %1").arg(out.error), true);
          }
          return;
        }
        bar->finish(token, out.value->cached
                               ? QObject::tr("Automatic contrast of the whole stack, from the "
                                             "cache (the file was not read again)")
                               : QObject::tr("Automatic contrast of the whole stack, read from "
                                             "the file"));
        const Layer cur = host.layer(id);
        if (!cur.valid() || !cur.file || cur.file != file.lock()) return;  // replaced since
        done(out.value->low, out.value->high);
      });
}

}  // namespace gpix::ui::detail
