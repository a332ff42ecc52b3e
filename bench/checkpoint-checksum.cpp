// The cost of checkpoints' checksums (docs/checkpoints.md, "What is
// verified"): a rank file of `mib` MiB of f32 tensors written and read as a
// checkpoint does it, with checksums (CRC-32C of every tensor, of the header
// and of the whole file, all verified on reading) and without, best of
// `runs`; and the CRC-32C rate alone. Built and run by
// bench/checkpoint-checksum.sh.
#include "runtime/Crc32c.h"
#include "runtime/ReadFile.h"
#include "runtime/Safetensors.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

using namespace planc::runtime;

namespace {

template <typename F> double bestSeconds(int runs, F f) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void check(const Status &s) {
  if (!s.ok()) {
    std::fprintf(stderr, "checkpoint-checksum: %s\n", s.message().c_str());
    std::exit(1);
  }
}

} // namespace

int main(int argc, char **argv) {
  const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 512;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string dir = argc > 3 ? argv[3] : std::filesystem::temp_directory_path().string();
  // 16 MiB tensors of varied bytes, as a large model's rank file.
  HostTensorMap tensors;
  const int64_t perTensor = 4 << 20; // f32 elements
  for (int64_t i = 0; i * 16 < mib; ++i) {
    HostTensor t = HostTensor::zeros(ElementType::F32, {perTensor});
    for (size_t b = 0; b < t.bytes.size(); ++b) t.bytes[b] = uint8_t(b * 131 + size_t(i) * 7);
    tensors.emplace("blocks." + std::to_string(i) + ".w", std::move(t));
  }
  const double bytes = double(tensors.size()) * double(perTensor) * 4;
  const std::string plain = dir + "/plain.safetensors", summed = dir + "/summed.safetensors";
  const std::map<std::string, std::string> meta = {{"plan", "bench"}, {"step", "100"}};

  uint32_t sink = 0;
  const double crc = bestSeconds(runs, [&] {
    for (const auto &[name, t] : tensors) sink ^= crc32c(0, t.bytes.data(), t.bytes.size());
  });
  const double writePlain = bestSeconds(runs, [&] { check(writeSafetensors(plain, tensors, meta)); });
  FileDigest digest;
  const double writeSummed =
      bestSeconds(runs, [&] { check(writeSafetensors(summed, tensors, meta, /*checksums=*/true, &digest)); });
  const double readPlain = bestSeconds(runs, [&] {
    Result<std::string> b = readWholeFile(plain);
    check(b.status());
    check(parseSafetensors(*b, plain).status());
  });
  const double readSummed = bestSeconds(runs, [&] {
    Result<std::string> b = readWholeFile(summed);
    check(b.status());
    Result<SafetensorsContents> c = parseSafetensors(*b, summed);
    check(c.status());
    if (!c->checksummed || crc32c(*b) != digest.crc) check(errorStatus("the checksums were not verified"));
  });
  std::filesystem::remove(plain);
  std::filesystem::remove(summed);
  const double gb = bytes / 1e9;
  std::printf("checkpoint-checksum: a rank file of %.0f MiB (%zu tensors), best of %d (crc %08x)\n",
              bytes / 1048576.0, tensors.size(), runs, sink);
  std::printf("  CRC-32C alone       %7.3f s  %6.2f GB/s\n", crc, gb / crc);
  std::printf("  write, no checksums %7.3f s  %6.2f GB/s\n", writePlain, gb / writePlain);
  std::printf("  write, checksums    %7.3f s  %6.2f GB/s  ratio %.2f\n", writeSummed, gb / writeSummed,
              writeSummed / writePlain);
  std::printf("  read, no checksums  %7.3f s  %6.2f GB/s\n", readPlain, gb / readPlain);
  std::printf("  read, verified      %7.3f s  %6.2f GB/s  ratio %.2f\n", readSummed, gb / readSummed,
              readSummed / readPlain);
  return 0;
}
