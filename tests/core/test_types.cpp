// DType, Shape, Scalar, HostArray and human_bytes: no device needed.
#include <QTest>
#include <cmath>
#include <limits>

#include "backend/card_memory.h"
#include "gpix/gpix.h"

using namespace gpix;

class TestTypes : public QObject {
  Q_OBJECT
 private slots:
  void dtype_names() {
    for (DType d : kAllDTypes) {
      QCOMPARE(parse_dtype(name(d)), d);
      QCOMPARE(parse_dtype(short_name(d)), d);
    }
    QCOMPARE(parse_dtype("FLOAT"), DType::f32);
    QCOMPARE(parse_dtype(" uint16 "), DType::u16);
    QVERIFY(!parse_dtype("complex64"));
    QVERIFY(!parse_dtype(""));
    QCOMPARE(size_of(DType::u8), 1u);
    QCOMPARE(size_of(DType::i16), 2u);
    QCOMPARE(size_of(DType::f32), 4u);
    QCOMPARE(size_of(DType::u64), 8u);
    QVERIFY(is_float(DType::f64) && !is_float(DType::i64));
    QVERIFY(is_signed(DType::i8) && !is_signed(DType::u32));
    static_assert(dtype_of<std::int16_t> == DType::i16);
    static_assert(dtype_of<const double> == DType::f64);
  }

  void shape_valid() {
    Shape s{3, 4, 5};
    QCOMPARE(s.ndim(), 3);
    QCOMPARE(s.elements(), 60u);
    QCOMPARE(s.width(), 5u);
    QCOMPARE(s.height(), 4u);
    QCOMPARE(s.depth(), 3u);
    QCOMPARE(s.str(), std::string("3 x 4 x 5"));
    Shape t{7};
    QCOMPARE(t.height(), 1u);
    QCOMPARE(t.depth(), 1u);
    QVERIFY((Shape{2, 3} == Shape{2, 3}));
    QVERIFY(!(Shape{2, 3} == Shape{3, 2}));
  }

  void shape_errors() {
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, (Shape{0, 4}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, (Shape{2, 3, 4, 5}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Shape(std::span<const std::size_t>()));
    const std::size_t huge = std::numeric_limits<std::size_t>::max() / 4;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, (Shape{huge, huge}));
    try {
      Shape bad{5, 0};
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("(5, 0)") != std::string::npos, e.what());
      QVERIFY2(m.find("at least 1") != std::string::npos, e.what());
    }
  }

  void scalar_fits() {
    QVERIFY(Scalar(255).fits(DType::u8));
    QVERIFY(!Scalar(256).fits(DType::u8));
    QVERIFY(!Scalar(-1).fits(DType::u8));
    QVERIFY(Scalar(-128).fits(DType::i8));
    QVERIFY(!Scalar(1.5).fits(DType::i32));
    QVERIFY(Scalar(2.0).fits(DType::i32));
    QVERIFY(!Scalar(std::nan("")).fits(DType::i16));
    QVERIFY(Scalar(std::nan("")).fits(DType::f32));
    QVERIFY(Scalar(std::numeric_limits<std::uint64_t>::max()).fits(DType::u64));
    QVERIFY(!Scalar(std::numeric_limits<std::uint64_t>::max()).fits(DType::i64));
    QVERIFY(Scalar(std::numeric_limits<std::int64_t>::min()).fits(DType::i64));
    QVERIFY(!Scalar(0.1).fits(DType::f32));  // 0.1 is not exactly a float
    QVERIFY(Scalar(0.5).fits(DType::f32));
    QVERIFY(!Scalar(16777217).fits(DType::f32));
    QVERIFY(Scalar(16777216).fits(DType::f32));
    QVERIFY(!Scalar(4294967296.0).fits(DType::u32));
    QCOMPARE(Scalar(std::uint64_t{18446744073709551615u}).str(),
             std::string("18446744073709551615"));
    QCOMPARE(Scalar(-1.5).str(), std::string("-1.5"));
    QCOMPARE(Scalar(std::numeric_limits<double>::infinity()).str(), std::string("inf"));
    QCOMPARE(Scalar(200).exact_as<std::uint8_t>(), std::uint8_t{200});
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Scalar(300).exact_as<std::uint8_t>());
  }

  void host_array() {
    std::vector<std::int16_t> v = {1, -2, 3, -4, 5, -6};
    HostArray h = HostArray::from(v, Shape{2, 3});
    QCOMPARE(h.dtype(), DType::i16);
    QCOMPARE(h.bytes(), 12u);
    QCOMPARE(h.as<std::int16_t>()[3], std::int16_t{-4});
    QVERIFY_THROWS_EXCEPTION(UnsupportedDType, h.as<std::uint16_t>());
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, HostArray::from(v, Shape{4, 2}));
    HostArray shared = h;
    HostArray deep = h.clone();
    h.as<std::int16_t>()[0] = 99;
    QCOMPARE(shared.as<std::int16_t>()[0], std::int16_t{99});
    QCOMPARE(deep.as<std::int16_t>()[0], std::int16_t{1});
    HostArray z(Shape{5, 5}, DType::f64);
    for (double x : z.as<double>()) QCOMPARE(x, 0.0);
    QCOMPARE(reinterpret_cast<std::uintptr_t>(z.data()) % 64, 0u);
  }

  void human() {
    QCOMPARE(human_bytes(0), std::string("0 B"));
    QCOMPARE(human_bytes(999), std::string("999 B"));
    QCOMPARE(human_bytes(64000), std::string("64.0 kB"));
    QCOMPARE(human_bytes(65536), std::string("65.5 kB"));
    QCOMPARE(human_bytes(1500000), std::string("1.50 MB"));
    QCOMPARE(human_bytes(268435456), std::string("268 MB"));
    QCOMPARE(human_bytes(80000000000ull), std::string("80.0 GB"));
  }

  // The pieces of the nvidia-opencl-oom workaround that need no GPU: PCI addresses from
  // NVIDIA's OpenCL queries, matching them to CUDA's, and the free-memory decision.
  void card_memory() {
    using detail::PciAddress;
    // slot = device << 3 | function; the bus keeps its low 8 bits.
    const PciAddress cl = detail::pci_from_nv_opencl(0x13b, (0x1d << 3) | 5, 2u);
    QCOMPARE(cl.bus, std::int64_t{0x3b});
    QCOMPARE(cl.device, std::int64_t{0x1d});
    QCOMPARE(cl.domain, std::int64_t{2});
    QCOMPARE(cl.str(), std::string("0002:3b:1d"));
    PciAddress cu;
    cu.bus = 0x3b;
    cu.device = 0x1d;
    cu.domain = 2;
    QVERIFY(detail::same_card(cl, cu));
    cu.domain = 0;  // another domain: another card
    QVERIFY(!detail::same_card(cl, cu));
    const PciAddress nodomain = detail::pci_from_nv_opencl(0x3b, 0x1d << 3, std::nullopt);
    QCOMPARE(nodomain.domain, std::int64_t{-1});
    QVERIFY(detail::same_card(nodomain, cu));  // an unknown domain matches any
    QCOMPARE(nodomain.str(), std::string("?:3b:1d"));
    cu.device = 0x1c;
    QVERIFY(!detail::same_card(nodomain, cu));
    cu.device = 0x1d;
    cu.bus = 0x3c;
    QVERIFY(!detail::same_card(nodomain, cu));
    QVERIFY(!detail::same_card(PciAddress{}, PciAddress{}));  // unknown never matches
    // The raw slot read as the device number (NVIDIA's driver 580 on an H200 VM: 00:06).
    const PciAddress plain = detail::pci_from_nv_opencl(0, 6, 0u);
    PciAddress card;
    card.domain = 0;
    card.bus = 0;
    card.device = 6;
    QVERIFY(!detail::same_card(plain, card));
    QVERIFY(detail::same_card(plain.slot_as_device(), card));
    QCOMPARE(plain.slot_as_device().raw_slot, std::int64_t{-1});
    QCOMPARE(PciAddress{}.str(), std::string("unknown"));

    constexpr std::uint64_t GB = std::uint64_t{1} << 30, MB = std::uint64_t{1} << 20;
    // The margin: 512 MiB on small cards, 1/64 of large ones.
    QCOMPARE(detail::free_memory_margin(8 * GB), 512 * MB);
    QCOMPARE(detail::free_memory_margin(128 * GB), 2 * GB);
    // 37.5 GB on an idle 140 GB card fits; what is left after three does not take a fourth.
    const std::uint64_t total = 140 * GB, block = 37 * GB + GB / 2;
    QVERIFY(detail::refuse_beyond_free(block, total - GB, total).empty());
    const std::string no = detail::refuse_beyond_free(block, total - 3 * block, total);
    QVERIFY2(no.find("are free on the card") != std::string::npos, no.c_str());
    // The boundary: exactly free - margin fits, one byte more does not.
    const std::uint64_t margin = detail::free_memory_margin(total), free = 20 * GB;
    QVERIFY(detail::refuse_beyond_free(free - margin, free, total).empty());
    QVERIFY(!detail::refuse_beyond_free(free - margin + 1, free, total).empty());
    // Less free than the margin: nothing fits, no underflow.
    QVERIFY(!detail::refuse_beyond_free(1, margin / 2, total).empty());
  }
};

QTEST_APPLESS_MAIN(TestTypes)
#include "test_types.moc"
