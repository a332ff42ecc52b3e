//===- capi/CheckPlan.cpp - planc check behind the C API ------------------===//
//
// The C functions of capi/planc.h, thin over the library: a Compilation
// loads and checks the plan, compiler/MemoryCheck.h plans and judges its
// memory, and the driver's own JSON printers turn both into text, so a C
// caller reads exactly what `planc check --diagnostics-format=json --json`
// prints. No exception and no C++ type crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#include "capi/planc.h"

#include "compiler/LargeStack.h"
#include "compiler/MemoryCheck.h"
#include "frontend/Frontend.h"
#include "support/Version.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <new>
#include <optional>
#include <string>

using namespace planc;

struct planc_check_result {
  bool hasErrors = true;
  std::string diagnostics = "[]";   // a JSON array
  std::optional<std::string> ledger; // a JSON object; none: memory not checked
};

namespace {

FrontendOptions frontendOptions(const planc_check_options *options) {
  FrontendOptions fo;
  if (options)
    for (size_t i = 0; i < options->num_overrides; ++i)
      if (options->overrides[i]) fo.setOverrides.push_back(options->overrides[i]);
  return fo;
}

/// The JSON consumer writes one object per line (the --diagnostics-format=json
/// lines); a C caller gets them as one array.
std::string jsonArrayOfLines(llvm::StringRef lines) {
  std::string array = "[";
  llvm::SmallVector<llvm::StringRef, 8> split;
  lines.split(split, '\n', -1, /*KeepEmpty=*/false);
  for (size_t i = 0; i < split.size(); ++i) array += (i ? "," : "") + split[i].str();
  return array + "]";
}

/// What `planc check` does after the load (tools/planc's runCheck): the
/// plan's checks, then, on a checked model, the memory check, whose
/// diagnostics join the plan's.
void checkLoaded(Compilation &c, bool loaded, const planc_check_options *options, planc_check_result &r) {
  bool ok = loaded && c.check();
  bool skipMemory = options && options->skip_memory;
  if (ok && !skipMemory) {
    std::string json;
    llvm::raw_string_ostream os(json);
    if (!c.getProgram().model) {
      printMemoryNotPlannedJson("the plan has no model", os);
    } else {
      MemoryCheckOptions mo;
      if (options && options->budget_bytes) mo.budgetBytes = options->budget_bytes;
      // As the driver without PLANC_VERIFY_EACH: verifying a large model
      // after every pass costs more than the passes.
      mo.verifyEach = false;
      auto checked = checkMemory(c, mo);
      if (checked) printMemoryCheckJson(*checked, os);
      else printMemoryNotPlannedJson(llvm::toString(checked.takeError()), os);
    }
    r.ledger = std::move(os.str());
  }
  c.getDiagnostics().finish();
  r.hasErrors = !ok || c.getDiagnostics().hasErrors();
}

/// Runs one check on a large stack (the frontend recurses) and returns its
/// result, or null when memory runs out.
planc_check_result *check(const planc_check_options *options, const std::function<bool(Compilation &)> &load) {
  auto *r = new (std::nothrow) planc_check_result;
  if (!r) return nullptr;
  bool failed = false;
  runOnLargeStack([&] {
    // An exception must not leave this thread: it would end the process.
    try {
      std::string lines;
      llvm::raw_string_ostream diagnostics(lines);
      {
        Compilation c(frontendOptions(options));
        c.setDiagnosticOutput(diagnostics, /*json=*/true, /*colors=*/false);
        checkLoaded(c, load(c), options, *r);
      }
      r->diagnostics = jsonArrayOfLines(diagnostics.str());
    } catch (...) {
      failed = true;
    }
  });
  if (failed) {
    delete r;
    return nullptr;
  }
  return r;
}

} // namespace

extern "C" {

planc_check_result *planc_check_file(const char *path, const planc_check_options *options) {
  if (!path) return nullptr;
  return check(options, [&](Compilation &c) { return c.loadFile(path); });
}

planc_check_result *planc_check_string(const char *name, const char *text, size_t size,
                                       const planc_check_options *options) {
  if (!name || !text) return nullptr;
  return check(options, [&](Compilation &c) { return c.loadString(name, llvm::StringRef(text, size)); });
}

int planc_result_has_errors(const planc_check_result *result) { return !result || result->hasErrors; }

const char *planc_result_diagnostics_json(const planc_check_result *result) {
  return result ? result->diagnostics.c_str() : nullptr;
}

const char *planc_result_ledger_json(const planc_check_result *result) {
  return result && result->ledger ? result->ledger->c_str() : nullptr;
}

void planc_result_free(planc_check_result *result) { delete result; }

const char *planc_version(void) {
  static const std::string version = std::string(versionNumber()) + " (" + sourceRevision() + ")";
  return version.c_str();
}

} // extern "C"
