#include "jpeg.h"

#include <itkMetaDataObject.h>

// jpeglib.h needs FILE and size_t declared before it.
#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include <jerror.h>
#include <jpeglib.h>

#include "tiff.h"  // kUnitKey

namespace gpix::io::detail {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw itk::ExceptionObject(__FILE__, __LINE__, what, "gpix libjpeg");
}

// One decompression, plain data only: a longjmp crosses the frames that use it.
struct Decoder {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// libjpeg calls error_exit on a fatal error and must not get control back.
[[noreturn]] void on_error(j_common_ptr c) {
  auto* d = static_cast<Decoder*>(c->client_data);
  (*c->err->format_message)(c, d->message);
  std::longjmp(d->jump, 1);
}

// Warnings (level -1) that mean pixels were not decoded: libjpeg fills them with grey and
// goes on. gpix refuses such a file rather than hand out a partly invented image. These are
// the "Corrupt JPEG data" messages (arithmetic-coding ones exist only in some builds, so they
// are recognised by their text), a premature end and a bogus progression; extraneous bytes
// before a marker are skipped without loss, and the rest (an unknown JFIF revision or Adobe
// transform) leave the pixels whole. Trace messages (level >= 0) are ignored.
void on_message(j_common_ptr c, int level) {
  if (level >= 0) return;
  const int code = c->err->msg_code;
  if (code == JWRN_EXTRANEOUS_DATA) return;
  const char* text =
      code >= 0 && code <= c->err->last_jpeg_message ? c->err->jpeg_message_table[code] : nullptr;
  const bool corrupt = text && std::strncmp(text, "Corrupt JPEG data", 17) == 0;
  if (corrupt || code == JWRN_JPEG_EOF || code == JWRN_BOGUS_PROGRESSION) on_error(c);
}

using Step = void (*)(Decoder&, void*);

// Runs step under d's jump buffer; false when libjpeg failed (d.message says why). The frames
// a longjmp leaves (step's and libjpeg's) own nothing: no destructor is skipped, and nothing
// in this frame is changed between setjmp and the jump.
bool guarded(Decoder& d, Step step, void* arg) {
  if (setjmp(d.jump)) return false;
  step(d, arg);
  return true;
}

void create_step(Decoder& d, void* file) {
  jpeg_create_decompress(&d.cinfo);  // keeps cinfo.err and cinfo.client_data
  jpeg_stdio_src(&d.cinfo, static_cast<std::FILE*>(file));
}

void header_step(Decoder& d, void*) {
  jpeg_read_header(&d.cinfo, TRUE);
  jpeg_calc_output_dimensions(&d.cinfo);
}

struct Target {
  unsigned char* out;
  std::size_t width, height, components;
  bool mismatch;
};

void decode_step(Decoder& d, void* arg) {
  auto* t = static_cast<Target*>(arg);
  jpeg_read_header(&d.cinfo, TRUE);
  // Progressive and multi-scan files keep every coefficient until the last scan: about two
  // bytes per sample. Beyond a few times that, libjpeg stops with an error instead of taking
  // what a corrupt header asks for (libjpeg-turbo honours the limit without a backing store).
  const std::size_t samples = std::size_t{d.cinfo.image_width} * d.cinfo.image_height *
                              static_cast<std::size_t>(d.cinfo.num_components);
  const std::size_t limit = 8 * samples + (std::size_t{64} << 20);
  d.cinfo.mem->max_memory_to_use =
      static_cast<long>(std::min<std::size_t>(limit, std::numeric_limits<long>::max()));
  jpeg_start_decompress(&d.cinfo);
  if (d.cinfo.output_width != t->width || d.cinfo.output_height != t->height ||
      static_cast<std::size_t>(d.cinfo.output_components) != t->components) {
    t->mismatch = true;  // the file changed since its header was read
    return;
  }
  const std::size_t row_bytes = t->width * t->components;
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    JSAMPROW row = t->out + std::size_t{d.cinfo.output_scanline} * row_bytes;
    if (jpeg_read_scanlines(&d.cinfo, &row, 1) != 1) {
      t->mismatch = true;  // a data source that suspends: not the stdio one
      return;
    }
  }
  jpeg_finish_decompress(&d.cinfo);
}

// An open file with its decompressor; errors are itk::ExceptionObjects.
class JpegFile {
 public:
  explicit JpegFile(const std::string& name) : file_(std::fopen(name.c_str(), "rb")) {
    if (!file_) fail("cannot open it: " + std::string(std::strerror(errno)));
    std::memset(&d_, 0, sizeof d_);
    d_.cinfo.err = jpeg_std_error(&d_.err);
    d_.err.error_exit = &on_error;
    d_.err.emit_message = &on_message;
    d_.cinfo.client_data = &d_;
    // jpeg_create_decompress allocates its pools first: destroying is safe after any failure.
    created_ = true;
    if (!guarded(d_, &create_step, file_)) fail(std::string("libjpeg: ") + d_.message);
  }
  ~JpegFile() {
    if (created_) jpeg_destroy_decompress(&d_.cinfo);
    std::fclose(file_);
  }
  JpegFile(const JpegFile&) = delete;
  JpegFile& operator=(const JpegFile&) = delete;

  // Throws with libjpeg's message; `doing` says which step.
  void run(Step step, void* arg, const char* doing) {
    if (!guarded(d_, step, arg)) {
      fail(std::string("libjpeg (") + doing + "): " + d_.message);
    }
  }
  const jpeg_decompress_struct& info() const { return d_.cinfo; }

 private:
  std::FILE* file_;
  Decoder d_;
  bool created_ = false;
};

class JpegImageIO final : public itk::ImageIOBase {
 public:
  ITK_DISALLOW_COPY_AND_MOVE(JpegImageIO);
  using Self = JpegImageIO;
  using Pointer = itk::SmartPointer<Self>;
  // What itkNewMacro would write (its trailing semicolons trip -Wpedantic).
  static Pointer New() {
    Pointer p = new Self;
    p->UnRegister();  // ITK objects are born with one reference, now held by p
    return p;
  }
  itk::LightObject::Pointer CreateAnother() const override { return New().GetPointer(); }
  const char* GetNameOfClass() const override { return "GpixJpegImageIO"; }

  // By content, not by extension, so that io.cpp can name a JPEG behind another extension.
  bool CanReadFile(const char* file) override {
    unsigned char magic[2] = {};
    if (std::FILE* f = std::fopen(file, "rb")) {
      const std::size_t got = std::fread(magic, 1, 2, f);
      std::fclose(f);
      if (got != 2 || magic[0] != 0xff || magic[1] != 0xd8) return false;
    } else {
      return false;
    }
    try {
      JpegFile jpeg(file);
      jpeg.run(&header_step, nullptr, "header");
      return true;
    } catch (const itk::ExceptionObject&) {
      return false;
    }
  }
  bool CanWriteFile(const char*) override { return false; }
  void WriteImageInformation() override {}
  void Write(const void*) override { fail("gpix writes JPEG through ITK's JPEGImageIO"); }

  // As ITK's JPEGImageIO describes a file, so that nothing else changes for gpix's callers.
  void ReadImageInformation() override {
    JpegFile jpeg(m_FileName);
    jpeg.run(&header_step, nullptr, "header");
    const jpeg_decompress_struct& c = jpeg.info();
    SetNumberOfDimensions(2);
    m_Dimensions[0] = c.output_width;
    m_Dimensions[1] = c.output_height;
    m_Spacing[0] = m_Spacing[1] = 1.0;
    m_Origin[0] = m_Origin[1] = 0.0;
    if (c.density_unit > 0 && c.X_density > 0 && c.Y_density > 0 &&
        (c.density_unit == 1 || c.density_unit == 2)) {
      const double per_unit = c.density_unit == 1 ? 25.4 : 10.0;  // inches or cm, to mm
      m_Spacing[0] = per_unit / c.X_density;
      m_Spacing[1] = per_unit / c.Y_density;
      // Millimetres, said as TIFF's resolutions in inches or centimetres are: without the unit
      // a 300-dpi photo read as a spacing of 0.0847 with "unit: none".
      itk::EncapsulateMetaData<std::string>(GetMetaDataDictionary(), kUnitKey, "mm");
    }
    const auto components = static_cast<unsigned>(c.output_components);
    SetNumberOfComponents(components);
    SetComponentType(itk::IOComponentEnum::UCHAR);
    switch (components) {
      case 1:
        SetPixelType(itk::IOPixelEnum::SCALAR);
        break;
      case 3:
        SetPixelType(itk::IOPixelEnum::RGB);
        break;
      case 4:
        SetPixelType(itk::IOPixelEnum::RGBA);
        break;
      default:
        SetPixelType(itk::IOPixelEnum::VECTOR);
        break;
    }
  }

  void Read(void* buffer) override {
    JpegFile jpeg(m_FileName);
    Target t{static_cast<unsigned char*>(buffer), m_Dimensions[0], m_Dimensions[1],
             GetNumberOfComponents(), false};
    jpeg.run(&decode_step, &t, "pixels");
    if (t.mismatch) fail("the file changed while it was read");
  }

 protected:
  JpegImageIO() {
    SetNumberOfDimensions(2);
    for (const char* e : {".jpg", ".JPG", ".jpeg", ".JPEG"}) AddSupportedReadExtension(e);
  }
  ~JpegImageIO() override = default;
};

}  // namespace

itk::ImageIOBase::Pointer jpeg_reader() {
  return JpegImageIO::New().GetPointer();
}

}  // namespace gpix::io::detail
