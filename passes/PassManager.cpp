//===- passes/PassManager.cpp - running pipelines of passes --------------===//

#include "passes/PassManager.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "support/Error.h"

#include <chrono>

using namespace planc;

const PassInfo *planc::findPass(llvm::StringRef name) {
  for (const PassInfo &p : registeredPasses())
    if (p.name == name) return &p;
  return nullptr;
}

PassManager::PassManager(PassManagerOptions options, PassPipelineOptions passOptions)
    : options(std::move(options)), passOptions(std::move(passOptions)) {}

llvm::Error PassManager::add(llvm::StringRef name) {
  if (const PassInfo *p = findPass(name)) {
    pipeline.push_back(p);
    return llvm::Error::success();
  }
  std::string known;
  for (const PassInfo &p : registeredPasses()) known += (known.empty() ? "" : ", ") + p.name;
  return makeError("unknown pass '" + name + "'; the passes are " + known);
}

llvm::Error PassManager::addPipeline(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 8> names;
  text.split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef n : names)
    if (llvm::Error e = add(n.trim())) return e;
  return llvm::Error::success();
}

namespace {
/// Writes the module a pass failed on, so the failure reproduces with plan-opt.
std::string writeReproducer(const std::string &dir, const std::string &pass, const std::string &text) {
  if (dir.empty()) return "";
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "planc-reproducer-" + pass + ".ir");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) return "";
  os << text;
  return std::string(path.str());
}
} // namespace

llvm::Error PassManager::run(ir::Module &m) {
  times.clear();
  llvm::raw_ostream &out = options.printStream ? *options.printStream : llvm::errs();
  // The reproducer of a failing pass is the IR it was given. Printing the
  // module before every pass costs more than the passes on a large model,
  // so at most the pipeline's input is kept (a copy), and not even that when
  // the caller can rebuild it; a failure re-runs the passes before the
  // failing one on a copy of the input (the passes are deterministic) to
  // recover that IR.
  const bool reproduce = !options.reproducerDir.empty();
  const std::unique_ptr<ir::Module> input = reproduce && !options.rebuildInput ? m.clone() : nullptr;
  auto inputOf = [&](size_t index) -> std::string {
    std::unique_ptr<ir::Module> copy = options.rebuildInput ? options.rebuildInput() : input->clone();
    if (!copy) return "";
    for (size_t i = 0; i < index; ++i)
      if (llvm::Error e = pipeline[i]->create(passOptions)->run(*copy)) {
        llvm::consumeError(std::move(e));
        return options.rebuildInput ? "" : ir::toText(*input);
      }
    return ir::toText(*copy);
  };
  for (size_t index = 0; index < pipeline.size(); ++index) {
    const PassInfo *info = pipeline[index];
    std::string before = options.printAfterChange ? ir::toText(m) : std::string();
    std::unique_ptr<Pass> pass = info->create(passOptions);
    auto start = std::chrono::steady_clock::now();
    llvm::Error err = pass->run(m);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    times.push_back({info->name, seconds});
    auto fail = [&](const std::string &what) {
      std::string text = reproduce ? inputOf(index) : std::string();
      std::string file = text.empty() ? std::string() : writeReproducer(options.reproducerDir, info->name, text);
      std::string msg = "internal error in pass '" + info->name + "': " + what;
      if (!file.empty()) msg += "\nthe IR it was given is in " + file + "; rerun with: plan-opt " + file + " --passes=" + info->name;
      return makeError(msg);
    };
    if (err) return fail(llvm::toString(std::move(err)));
    if (options.verifyEach)
      if (llvm::Error v = ir::verify(m)) return fail("the IR it produced does not verify:\n" + llvm::toString(std::move(v)));
    bool print = options.printAfterAll || options.printAfter.count(info->name);
    if (options.printAfterChange) print = print || ir::toText(m) != before;
    if (print) {
      out << "// ----- IR after " << info->name << " -----\n";
      ir::print(m, out);
    }
  }
  if (!options.verifyEach && !pipeline.empty())
    if (llvm::Error v = ir::verify(m)) {
      std::string names;
      for (const PassInfo *info : pipeline) names += (names.empty() ? "" : ",") + info->name;
      return makeError("internal error: the IR after passes '" + names + "' does not verify:\n" +
                                         llvm::toString(std::move(v)) +
                                         "\nrerun with PLANC_VERIFY_EACH=1 to find the pass");
    }
  if (options.timePasses) printTimings(out);
  return llvm::Error::success();
}

void PassManager::printTimings(llvm::raw_ostream &os) const {
  double total = 0;
  for (auto &[n, t] : times) total += t;
  os << "===-------------------------------------------------------------------------===\n"
     << "                              pass execution time\n"
     << "===-------------------------------------------------------------------------===\n"
     << llvm::format("  total: %.4f s\n\n", total) << "   seconds    share  pass\n";
  for (auto &[n, t] : times)
    os << llvm::format("  %8.4f  %6.1f%%  %s\n", t, total > 0 ? 100.0 * t / total : 0.0, n.c_str());
}
