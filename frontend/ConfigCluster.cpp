//===- frontend/ConfigCluster.cpp - the cluster { } block and device presets ---===//
//
// How many machines, how many devices each, what a device can do (a preset
// from Devices.def, a preset with some numbers changed, or a custom device) and
// the links between devices inside a node and between nodes.
//
//===----------------------------------------------------------------------===//

#include "frontend/ConfigReader.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>

using namespace planc;
using namespace planc::config;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kTFLOPS = 1e12;
constexpr double kGBps = 1e9;

struct PresetRow {
  const char *name;
  double memory, f64, f32, bf16, f16, fp8, bandwidth;
  const char *linkKind;
  double linkBandwidth;
};

const PresetRow presetRows[] = {
#define DEVICE(NAME, MEMORY, F64, F32, BF16, F16, FP8, BANDWIDTH, LINK, LINK_BANDWIDTH)            \
  {#NAME, MEMORY, F64, F32, BF16, F16, FP8, BANDWIDTH, LINK, LINK_BANDWIDTH},
#include "frontend/Devices.def"
#undef DEVICE
};

/// Sets a peak rate; a dtype the device cannot compute in has no entry.
void setFlops(DeviceSpec &d, StringRef dtype, double flops) {
  if (flops > 0) d.peakFlops[dtype.str()] = flops;
  else d.peakFlops.erase(dtype.str());
}

/// fp8 is one hardware rate for both encodings (e4m3 forward, e5m2 gradients).
void setFp8(DeviceSpec &d, double flops) {
  setFlops(d, "fp8_e4m3", flops);
  setFlops(d, "fp8_e5m2", flops);
}

const std::vector<DeviceSpec> &presetSpecs() {
  static const std::vector<DeviceSpec> specs = [] {
    std::vector<DeviceSpec> out;
    for (const PresetRow &row : presetRows) {
      DeviceSpec d;
      d.name = row.name;
      d.memoryBytes = uint64_t(row.memory);
      d.memoryBandwidth = row.bandwidth;
      d.isPreset = true;
      setFlops(d, "f64", row.f64);
      setFlops(d, "f32", row.f32);
      setFlops(d, "bf16", row.bf16);
      setFlops(d, "f16", row.f16);
      setFp8(d, row.fp8);
      out.push_back(std::move(d));
    }
    return out;
  }();
  return specs;
}

const PresetRow *findRow(StringRef name) {
  for (const PresetRow &row : presetRows)
    if (name == row.name) return &row;
  return nullptr;
}

std::vector<StringRef> presetNames() {
  std::vector<StringRef> names;
  for (const PresetRow &row : presetRows) names.push_back(row.name);
  return names;
}

/// The preset a misspelt device name most likely means. Edit distance alone
/// misses the common case of a short name (`h100`, `rtx4090`, `A100-80GB`), so
/// case and dashes are ignored and a unique prefix or substring also counts.
std::string closestPreset(StringRef name) {
  std::string norm = name.lower();
  std::replace(norm.begin(), norm.end(), '-', '_');
  std::vector<std::string> names;
  for (StringRef n : presetNames()) names.push_back(n.str());
  if (llvm::is_contained(names, norm)) return norm;
  std::string best = closestMatch(norm, names);
  if (!best.empty() || norm.empty()) return best;
  for (const std::string &n : names)
    if (StringRef(n).startswith(norm)) return n;
  for (const std::string &n : names)
    if (StringRef(n).contains(norm)) return n;
  return "";
}

/// Nominal figures for a link written by kind alone (`intra_node = nvlink`):
/// bandwidth per GPU and direction, and the small-message latency of a
/// collective step over it.
struct LinkDefaults {
  const char *kind;
  double bandwidth, latency;
};
const LinkDefaults linkDefaults[] = {
    {"nvlink", 300 * kGBps, 2e-6},      // NVLink 3 (A100); presets give their own
    {"pcie", 31.5 * kGBps, 5e-6},       // PCIe 4.0 x16
    {"infiniband", 25 * kGBps, 5e-6},   // one HDR 200 Gb/s NIC per GPU
    {"ethernet", 12.5 * kGBps, 20e-6},  // 100 GbE through the kernel's TCP stack
    {"shm", 10 * kGBps, 1e-6},          // ranks of one machine through shared memory
    {"custom", 0, 0},                   // the plan gives the numbers
};

const LinkDefaults &linkDefault(StringRef kind) {
  for (const LinkDefaults &l : linkDefaults)
    if (kind == l.kind) return l;
  return linkDefaults[std::size(linkDefaults) - 1];
}

LinkSpec makeLink(StringRef kind, double bandwidth) {
  LinkSpec l;
  l.kind = kind.str();
  l.bandwidth = bandwidth > 0 ? bandwidth : linkDefault(kind).bandwidth;
  l.latency = linkDefault(kind).latency;
  return l;
}

const KeySpec keys[] = {
    {"nodes", "'nodes = 2'"},
    {"gpus_per_node", "'gpus_per_node = 8'"},
    {"device", "'device a100_80gb' or 'device { memory = 80 GiB, bf16 = 312 TFLOPS }'"},
    {"intra_node", "'intra_node = nvlink(300 GB/s, latency = 2 us)'"},
    {"inter_node", "'inter_node = infiniband(8 * 200 Gb/s, latency = 5 us)'"},
};

const KeySpec &spec(StringRef key) { return keySpec(keys, key); }

const Field *get(const Bound &args, StringRef name) {
  auto it = args.find(name.str());
  return it == args.end() ? nullptr : &it->second;
}

void readDevice(const Entry &e, ClusterConfig &out, Reader &r) {
  const KeySpec &key = spec("device");
  auto s = r.structured(e, key);
  if (!s) return;
  if (s->scalar) {
    r.formError(e.key, e.keyRange, key.example);
    return;
  }
  DeviceSpec d = out.device; // only --set arguments: they adjust the current device
  if (!s->head.empty()) {
    const DeviceSpec *preset = findDevicePreset(s->head);
    if (!preset) {
      auto diag = r.diags.report(DiagID::err_unknown_device, s->headRange);
      diag << s->head;
      std::string best = closestPreset(s->head);
      if (!best.empty()) {
        diag.note(DiagID::note_did_you_mean, s->headRange, {best});
        diag.fixit(s->headRange, best);
      }
      diag.note(DiagID::note_valid_choices, SMRange(), {joinChoices(presetNames())});
      return;
    }
    d = *preset;
  } else if (s->written) {
    d = DeviceSpec(); // `device { ... }`: every number comes from the plan
    d.name = "custom";
  }

  static const StringRef params[] = {"memory", "bandwidth", "f64", "f32", "bf16", "f16",
                                     "fp8", "fp8_e4m3", "fp8_e5m2"};
  Bound args = r.bind("device", *s, params, 0, key.example);
  if (const Field *f = get(args, "memory"))
    if (auto v = r.quantity(f->value, "memory", UnitDim::Bytes)) {
      if (*v >= 0x1p63)
        r.diags.report(DiagID::err_setting_value, f->value->range)
            << "memory" << "less than 8 EiB" << Reader::describe(f->value);
      else
        d.memoryBytes = uint64_t(std::llround(*v));
    }
  if (const Field *f = get(args, "bandwidth"))
    if (auto v = r.quantity(f->value, "bandwidth", UnitDim::Bandwidth)) d.memoryBandwidth = *v;
  for (StringRef dtype : ArrayRef<StringRef>(params).drop_front(2))
    if (const Field *f = get(args, dtype))
      if (auto v = r.quantity(f->value, dtype, UnitDim::FlopRate)) {
        if (dtype == "fp8") setFp8(d, *v);
        else setFlops(d, dtype, *v);
      }
  if (!args.empty()) d.isPreset = false;
  if (d.memoryBytes == 0) {
    // The memory budget is what most of planc checks; a device without one
    // cannot be planned for (FLOP/s and bandwidth only feed the time estimate),
    // so the default device stays. A memory written with a bad value was
    // reported already: only a missing one is reported here.
    if (!get(args, "memory")) r.diags.report(DiagID::err_missing_setting, e.keyRange) << "device" << "memory";
    return;
  }
  out.device = d;
  out.deviceSource.range = e.source;
}

/// Reads a link; returns true if its bandwidth was written.
bool readLink(const Entry &e, LinkSpec &out, const LinkSpec &sameKindDefault, Reader &r) {
  const KeySpec &key = spec(e.key);
  auto s = r.structured(e, key);
  if (!s) return false;
  if (s->scalar || (s->written && s->head.empty())) {
    r.formError(e.key, e.keyRange, key.example);
    return false;
  }
  LinkSpec l = out;
  if (!s->head.empty()) {
    static const StringRef kinds[] = {"nvlink", "pcie", "infiniband", "ethernet", "shm", "custom"};
    auto k = r.choice("link kind", s->head, s->headRange, kinds);
    if (!k) return false;
    l = s->head == sameKindDefault.kind ? sameKindDefault : makeLink(s->head, 0);
  }
  Bound args = r.bind(l.kind, *s, {"bandwidth", "latency"}, 2, key.example);
  bool written = false;
  if (const Field *f = get(args, "bandwidth"))
    if (auto v = r.quantity(f->value, "bandwidth", UnitDim::Bandwidth)) {
      l.bandwidth = *v;
      written = true;
    }
  if (const Field *f = get(args, "latency"))
    if (auto v = r.quantity(f->value, "latency", UnitDim::Time, /*allowZero=*/true)) l.latency = *v;
  if (l.bandwidth <= 0) {
    r.diags.report(DiagID::err_missing_arg, s->headRange.isValid() ? s->headRange : e.keyRange)
        << "bandwidth" << l.kind;
    return false;
  }
  l.source.range = e.source;
  out = l;
  return written;
}

} // namespace

llvm::ArrayRef<DeviceSpec> planc::devicePresets() { return presetSpecs(); }

const DeviceSpec *planc::findDevicePreset(llvm::StringRef name) {
  for (const DeviceSpec &d : presetSpecs())
    if (d.name == name) return &d;
  return nullptr;
}

ArrayRef<KeySpec> config::clusterKeys() { return keys; }

ClusterFacts config::interpretCluster(const Block &block, ClusterConfig &c, Reader &r) {
  ClusterFacts facts;
  r.readInteger(block, spec("nodes"), c.nodes, c.nodesSource, 1, kMaxCount);
  r.readInteger(block, spec("gpus_per_node"), c.gpusPerNode, c.gpusSource, 1, kMaxCount);
  facts.sizesWritten = block.find("nodes") || block.find("gpus_per_node");

  // Without a device the plan is for CPU ranks: that is what runs anywhere.
  c.device = *findDevicePreset("cpu");
  r.with(block, "device", [&](const Entry &e) { readDevice(e, c, r); });

  // The intra-node link follows the device's preset unless the plan says otherwise.
  const PresetRow *row = findRow(c.device.name);
  LinkSpec deviceLink = row ? makeLink(row->linkKind, row->linkBandwidth) : makeLink("pcie", 0);
  c.intraNode = deviceLink;
  r.with(block, "intra_node", [&](const Entry &e) { readLink(e, c.intraNode, deviceLink, r); });

  c.interNode = makeLink("infiniband", 0);
  r.with(block, "inter_node", [&](const Entry &e) {
    facts.interNodeWritten = readLink(e, c.interNode, makeLink("infiniband", 0), r);
  });
  return facts;
}
