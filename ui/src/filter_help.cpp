#include "gpix/ui/filter_help.h"

#include <QHash>
#include <QObject>
#include <cmath>

namespace gpix::ui {

namespace {

QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

struct UserText {
  const char* what;
  const char* when;
};

// Plain words for users; the catalog's doc line stays the exact definition.
const QHash<QString, UserText>& user_text() {
  static const QHash<QString, UserText> t = {
      {"absolute",
       {"Replaces every pixel by its magnitude (drops the sign).",
        "After a difference or a gradient, when only the size of a change matters."}},
      {"add_images",
       {"Adds two images pixel by pixel.", "To combine channels or add a correction image."}},
      {"add_scalar",
       {"Adds one number to every pixel.",
        "To shift intensities, e.g. to remove a constant offset."}},
      {"clip",
       {"Limits every pixel to a range: values below the minimum become the minimum, above the "
        "maximum the maximum (in integer images the nearest whole numbers inside the range).",
        "To remove outliers (hot pixels, saturated spots) before measuring or displaying."}},
      {"divide_images",
       {"Divides one image by another pixel by pixel.",
        "Flat-field correction (image / flat), ratio imaging. Convert integers to float32 first to "
        "keep fractions."}},
      {"exp", {"Raises e to the power of every pixel.", "To undo a logarithm."}},
      {"invert",
       {"Turns dark into bright and bright into dark.",
        "For images with bright background and dark objects before thresholding."}},
      {"log",
       {"Natural logarithm of every pixel.",
        "To compress a wide intensity range (e.g. spectra, very bright spots next to dim ones)."}},
      {"maximum_images",
       {"Keeps the brighter of two images at each pixel.", "To merge two views or masks."}},
      {"minimum_images",
       {"Keeps the darker of two images at each pixel.", "To restrict one image by another."}},
      {"multiply_images",
       {"Multiplies two images pixel by pixel.",
        "To apply a mask (multiply by a 0/1 image) or a weight map."}},
      {"multiply_scalar",
       {"Multiplies every pixel by one number.",
        "To scale intensities (gain correction, unit conversion)."}},
      {"power",
       {"Raises every pixel to a power.",
        "Gamma-like corrections of the data itself (the view's contrast does not need it)."}},
      {"sqrt",
       {"Square root of every pixel.",
        "To stabilise the variance of photon-counting data before filtering."}},
      {"subtract_images",
       {"Subtracts the second image from the first pixel by pixel.",
        "Background subtraction with a background image; convert to a signed or float type first "
        "if results can be negative."}},
      {"convert",
       {"Changes the pixel type (e.g. 16-bit to 32-bit float).",
        "Before arithmetic that needs fractions or negative values; before saving in a format that "
        "needs a given type."}},
      {"rescale_intensity",
       {"Stretches the image's range to a new one (0..1 by default).",
        "To compare images recorded with different exposure, or before exporting."}},
      {"bottom_hat_box",
       {"Finds small dark details: the image's closing minus the image.",
        "To pick out dark spots or thin dark lines smaller than the box on a bright, uneven "
        "background."}},
      {"difference_of_gaussian",
       {"Subtracts a strongly blurred copy from a lightly blurred one: a band-pass filter.",
        "To enhance blobs (nuclei, vesicles) of about sigma1..sigma2 pixels before detecting "
        "them."}},
      {"gaussian_blur",
       {"Smooths the image with a Gaussian (bell-shaped) weighting of the neighbours.",
        "The standard first step against noise before thresholding or segmentation. Sigma is the "
        "width in pixels; on stacks set sigma_z as well (often smaller, since z spacing is usually "
        "coarser)."}},
      {"gradient_x",
       {"Slope of the intensity along x.",
        "To find edges running in y, or as an input to custom measurements."}},
      {"gradient_y", {"Slope of the intensity along y.", "To find edges running in x."}},
      {"gradient_z",
       {"Slope of the intensity along z (stacks only).",
        "To find where structures start and end between planes."}},
      {"laplace",
       {"Second derivative: highlights where the intensity curves (edges, spots).",
        "Spot and edge enhancement; blur first, since it amplifies noise."}},
      {"maximum_box",
       {"Replaces each pixel by the brightest pixel in the box around it (grey dilation).",
        "To grow bright objects or fill small dark gaps."}},
      {"mean_box",
       {"Replaces each pixel by the average of the box around it.",
        "Fast smoothing; a Gaussian blur gives fewer artefacts at similar cost."}},
      {"median_box",
       {"Replaces each pixel by the median of the box around it.",
        "Removes salt-and-pepper noise and hot pixels while keeping edges sharp. Large 3D boxes "
        "are slow: radius 1-2 is usually enough."}},
      {"minimum_box",
       {"Replaces each pixel by the darkest pixel in the box around it (grey erosion).",
        "To shrink bright objects or estimate a background (followed by a maximum: an opening)."}},
      {"sobel",
       {"Edge strength: how fast the intensity changes at each pixel.",
        "To show or measure boundaries; as an input to watershed-like methods."}},
      {"top_hat_box",
       {"Keeps small bright details: the image minus its opening.",
        "Background subtraction for spots and thin bright structures smaller than the box (radius "
        "larger than the objects)."}},
      {"unsharp_mask",
       {"Sharpens by adding back the difference between the image and a blurred copy.",
        "To make edges crisper for viewing; do not measure intensities on the result."}},
      {"variance_box",
       {"Local variance in the box around each pixel.",
        "To find textured or noisy regions, or as a focus measure."}},
      {"binary_and", {"Keeps pixels that are set in both masks.", "To intersect two masks."}},
      {"binary_closing",
       {"Dilates, then erodes a mask: closes small holes and gaps.",
        "To fill small holes inside objects after thresholding."}},
      {"binary_dilation",
       {"Grows every object of a mask by the radius.",
        "To make objects touch their surroundings, or build a ring (dilation minus the mask)."}},
      {"binary_erosion",
       {"Shrinks every object of a mask by the radius.",
        "To separate objects that touch slightly, or remove thin protrusions."}},
      {"binary_not", {"Swaps foreground and background of a mask.", "To select the background."}},
      {"binary_opening",
       {"Erodes, then dilates a mask: removes specks smaller than the radius.",
        "To clean a thresholded mask of isolated noisy pixels."}},
      {"binary_or", {"Keeps pixels that are set in either mask.", "To unite two masks."}},
      {"binary_xor",
       {"Keeps pixels set in exactly one of the masks.", "To see where two masks differ."}},
      {"connected_components",
       {"Gives each separate object of a mask its own number (label).",
        "After thresholding, to count and measure objects. 'full' connects diagonal neighbours "
        "too."}},
      {"label_statistics",
       {"A table with one row per label: its size in pixels and the mean, minimum and maximum "
        "intensity under it.",
        "To measure objects after labelling (labels from connected_components or "
        "voronoi_otsu_labeling, intensities from the raw image)."}},
      {"relabel_sequential",
       {"Renumbers labels 1, 2, 3, ... without gaps.",
        "After removing objects, so that label numbers count them again."}},
      {"threshold",
       {"Makes a mask: 1 where the pixel is above the value, 0 elsewhere.",
        "When you know the intensity that separates objects from background."}},
      {"threshold_otsu",
       {"Makes a mask with a threshold chosen automatically (Otsu's method).",
        "Objects and background of clearly different brightness; blur first to reduce noise."}},
      {"voronoi_otsu_labeling",
       {"Finds and separates objects in one step: blur, Otsu threshold, seeds at local maxima, "
        "regions grown from the seeds.",
        "Nuclei and other round objects that touch. spot_sigma controls how close two objects may "
        "be and still be separated; outline_sigma how smooth the outlines are."}},
      {"affine_transform",
       {"Moves, rotates, scales or shears the image with a matrix.",
        "Registration with a known transform; for simple scaling use resample."}},
      {"crop",
       {"Cuts out a box of the image.",
        "To work on a region of interest and save memory and time."}},
      {"flip",
       {"Mirrors the image along the chosen axes.", "To match the orientation of another image."}},
      {"resample",
       {"Scales the image by a factor per axis.",
        "To make voxels isotropic (e.g. factor_z = z spacing / xy spacing) or to bin down large "
        "images."}},
      {"transpose",
       {"Swaps two axes.", "To look at a stack from the side (xz or yz) or to fix swapped axes."}},
      {"maximum_z_projection",
       {"The brightest value along z for each (x, y): a flat view of a stack.",
        "The usual overview of a fluorescence stack."}},
      {"mean_z_projection",
       {"The average along z for each (x, y).",
        "An overview that keeps intensities comparable and averages noise."}},
      {"minimum_z_projection",
       {"The darkest value along z for each (x, y).",
        "To estimate a background present in every plane."}},
      {"std_z_projection",
       {"How much each (x, y) varies along z (standard deviation).",
        "To find what changes over a time series stored as a stack."}},
      {"sum_z_projection",
       {"The sum along z for each (x, y).", "To measure total signal through the depth."}},
      {"histogram",
       {"Counts pixels in intensity bins (a table).",
        "To see the intensity distribution and choose a threshold."}},
      {"maximum_of_all_pixels",
       {"The largest pixel value (a table).", "Quick checks of saturation."}},
      {"mean_of_all_pixels",
       {"The average pixel value (a table).", "Comparing overall brightness between images."}},
      {"minimum_of_all_pixels",
       {"The smallest pixel value (a table).", "Quick checks of the background level."}},
      {"std_of_all_pixels",
       {"The standard deviation of all pixels (a table).", "A noise or contrast measure."}},
      {"sum_of_all_pixels",
       {"The sum of all pixels (a table).", "Total signal, e.g. of a masked image."}},
  };
  return t;
}

QString number(double v) {
  if (std::isfinite(v) && std::abs(v) >= 1e12) return QString::number(v, 'g', 3);
  return QString::number(v, 'g', 10);
}

QString range_text(const gpix::ParamSpec& p) {
  const QString unit = p.unit.empty() ? QString() : QLatin1Char(' ') + qs(p.unit);
  switch (p.type) {
    case gpix::ParamType::boolean:
      return QObject::tr("on or off, default %1")
          .arg(p.default_value != 0 ? QStringLiteral("on") : QStringLiteral("off"));
    case gpix::ParamType::choice: {
      QStringList c;
      for (const std::string& s : p.choices) c << qs(s);
      return QObject::tr("one of %1, default %2")
          .arg(c.join(QStringLiteral(", ")), qs(p.default_choice));
    }
    case gpix::ParamType::integer:
    case gpix::ParamType::real:
      break;
  }
  QString r;
  if (p.min > -1e299 && p.max < 1e299)
    r = QObject::tr("%1 to %2%3").arg(number(p.min), number(p.max), unit);
  else
    r = QObject::tr("any number%1")
            .arg(unit.isEmpty() ? QString() : QObject::tr(" (in%1)").arg(unit));
  return r + QObject::tr(", default %1%2").arg(number(p.default_value), unit);
}

}  // namespace

QString filter_summary(const gpix::FilterInfo& info) {
  const auto it = user_text().constFind(qs(info.name));
  if (it != user_text().constEnd()) return QString::fromUtf8(it->what);
  // No user text yet: the catalog's line up to its first semicolon is the plainest part.
  const QString doc = qs(info.doc);
  const QString head = doc.section(QLatin1Char(';'), 0, 0).trimmed();
  return head.isEmpty() ? doc : head.left(1).toUpper() + head.mid(1) + QLatin1Char('.');
}

QString filter_when(const gpix::FilterInfo& info) {
  const auto it = user_text().constFind(qs(info.name));
  return it != user_text().constEnd() ? QString::fromUtf8(it->when) : QString();
}

QString filter_help_html(const gpix::FilterInfo& info) {
  QString h;
  h += QStringLiteral("<h2>%1</h2>").arg(qs(info.name).toHtmlEscaped());
  h += QStringLiteral("<p><i>%1</i></p>").arg(qs(gpix::name(info.category)).toHtmlEscaped());
  h += QStringLiteral("<p>%1</p>").arg(filter_summary(info).toHtmlEscaped());
  if (const QString when = filter_when(info); !when.isEmpty())
    h += QObject::tr("<p><b>When to use it:</b> %1</p>").arg(when.toHtmlEscaped());
  h += QObject::tr("<h3>Inputs</h3><ul>");
  for (const gpix::InputSpec& in : info.inputs) {
    h += QStringLiteral("<li><b>%1</b> (%2)%3</li>")
             .arg(qs(in.name).toHtmlEscaped(), qs(gpix::name(in.kind)),
                  in.doc.empty() ? QString() : QStringLiteral(": ") + qs(in.doc).toHtmlEscaped());
  }
  QStringList dims;
  for (int d : info.dims) dims << QStringLiteral("%1D").arg(d);
  h += QObject::tr("</ul><p>Works on %1 images.</p>").arg(dims.join(QStringLiteral(", ")));
  if (info.params.empty()) {
    h += QObject::tr("<h3>Parameters</h3><p>None.</p>");
  } else {
    h += QObject::tr("<h3>Parameters</h3><ul>");
    for (const gpix::ParamSpec& p : info.params) {
      QString unit_note;
      if (p.unit == "px") unit_note = QObject::tr(" Pixels of the image (not µm).");
      h += QStringLiteral("<li><b>%1</b>: %2 (%3).%4</li>")
               .arg(qs(p.name).toHtmlEscaped(), qs(p.doc).toHtmlEscaped(),
                    range_text(p).toHtmlEscaped(), unit_note);
    }
    h += QStringLiteral("</ul>");
  }
  h += QObject::tr("<h3>Result</h3><p>%1 (%2).</p>")
           .arg(qs(gpix::name(info.output)), qs(info.output_dtype).toHtmlEscaped());
  h += QObject::tr("<h3>Exactly</h3><p>%1</p>").arg(qs(info.doc).toHtmlEscaped());
  if (info.tiles) {
    h += QObject::tr("<p>Runs slab by slab on large stacks, so Cancel stops it between slabs.</p>");
  }
  return h;
}

QStringList filter_help_orphans() {
  QStringList out;
  for (auto it = user_text().constBegin(); it != user_text().constEnd(); ++it) {
    bool found = false;
    for (const gpix::FilterInfo& f : gpix::filters()) found = found || qs(f.name) == it.key();
    if (!found) out << it.key();
  }
  return out;
}

QString quick_start_html() {
  return QObject::tr(R"(<h2>Quick start</h2>
<ol>
<li><b>Open an image</b>: File &gt; Open (Ctrl+O), or drag files onto the window. TIFF stacks,
PNG, NRRD, MetaImage, NIfTI and raw files open as layers. With no file, a sample image is
shown; more are under File &gt; Open sample.</li>
<li><b>Look at it</b>: scroll to zoom, drag to pan, F fits the image to the window, 1 shows one
image pixel per screen pixel. For stacks, the slider under the image (or Page Up/Down) moves
through the planes. The status bar shows the position and value under the cursor.</li>
<li><b>Adjust the display</b> in the Layers panel: visibility, opacity, colour map, and the
contrast limits (Auto uses the 0.5 and 99.5 percentiles). Double-click a name to rename it.
These change only the view, never the pixels.</li>
<li><b>Run a filter</b>: pick one in the Filters panel (type in the search box to find it),
set its parameters and press Run. The result is a new layer named after its input and the
filter ("cells · gaussian_blur sigma=2"). Live preview shows the result while you change
parameters. Long filters show what they are doing (compiling kernels, slab 2 of 4) and
Cancel stops them; nothing is added then.</li>
<li><b>Measure</b>: Tools &gt; Rectangle (R), Ellipse (E) or Polygon (P; double-click or Enter
closes it) draws a region of interest; the ROIs panel lists its area (in µm² on calibrated
images), mean, std, min, max and sum, crops to it, and exports CSV. The Line tool (L) plots the
values along a line. The Pointer (S) selects, moves and reshapes them; Delete removes one.</li>
<li><b>Undo</b> anything with Ctrl+Z and redo with Ctrl+Shift+Z: filter results, removed or
renamed layers, reordering and display changes.</li>
<li><b>Choose the device</b> in the Devices panel: every GPU and CPU device gpix found; layers
move with you when you switch.</li>
<li><b>Keep your work</b>: File &gt; Save layer as writes a layer; File &gt; Save session keeps
every layer (by file; unsaved results are written beside the session file), the display
settings and the workflow, and File &gt; Open session brings it all back. The Workflow panel
lists the filters you ran; export it as a gpix command-line script or as C++, or re-run it on
another image.</li>
</ol>
<p>Filter parameters are in pixels unless their unit says otherwise. Help &gt; Filter help
explains every filter: what it does, its parameters and when to use it.</p>)");
}

}  // namespace gpix::ui
