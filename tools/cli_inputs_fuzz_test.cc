// Mutation fuzzing of what the `torchscan` command reads: the option parsers
// and TorchScript loading with corrupted archives. Each input must give a
// value that an independent check confirms, or an error that names the
// option or file; anything else (a crash, an exception escaping, a silently
// wrong value) fails. Seeds are fixed, so a failure reproduces; the
// execution counts are printed and recorded in docs/reliability.md.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tools/cli_inputs.h"
#include "tools/examples/script_modules.h"

namespace torchscan::cli {
namespace {

constexpr int kOptionExecutions = 20000;  // per parser
constexpr int kArchiveExecutions = 1000;

// Bytes that matter to the parsers, and some that must never be accepted.
constexpr char kAlphabet[] =
    "0123456789,;:- +.exEX\t torch.float32bfloat16int64cudametacpu\xff\x80";

std::string MutateText(std::string text, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> edits(1, 4);
  for (int edit = edits(rng); edit > 0; --edit) {
    const std::size_t size = text.size();
    const std::size_t at = size == 0 ? 0 : rng() % (size + 1);
    switch (rng() % 5) {
      case 0:  // insert
        text.insert(text.begin() + at,
                    rng() % 16 == 0
                        ? '\0'
                        : kAlphabet[rng() % (sizeof(kAlphabet) - 1)]);
        break;
      case 1:  // delete
        if (at < size) text.erase(at, 1);
        break;
      case 2:  // replace
        if (at < size) text[at] = static_cast<char>(rng() % 256);
        break;
      case 3:  // duplicate a piece
        if (size > 0) text.insert(at, text.substr(rng() % size, 1 + rng() % 8));
        break;
      default:  // truncate
        text.resize(at);
        break;
    }
  }
  return text;
}

// An independent reading of a shape list, to check accepted inputs.
bool IsDecimal(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

TEST(CliInputsFuzz, InputShapesAreNonNegativeIntegerListsOrNamedErrors) {
  const std::vector<std::string> seeds = {
      "3,224,224", "1", "3,224,224;16", "0", " 2 , 3 ", "9223372036854775807"};
  std::mt19937_64 rng(20261130);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < kOptionExecutions; ++i) {
    const std::string text = MutateText(seeds[i % seeds.size()], rng);
    const auto shapes = ParseInputShapes(text);
    if (!shapes.ok()) {
      ++rejected;
      ASSERT_TRUE(
          absl::StartsWith(shapes.status().message(), "bad --input-shape '"))
          << shapes.status();
      continue;
    }
    ++accepted;
    const std::vector<absl::string_view> parts = absl::StrSplit(text, ';');
    ASSERT_EQ(shapes->size(), parts.size()) << text;
    for (std::size_t s = 0; s < parts.size(); ++s) {
      const std::vector<absl::string_view> dims = absl::StrSplit(parts[s], ',');
      ASSERT_EQ((*shapes)[s].size(), dims.size()) << text;
      for (std::size_t d = 0; d < dims.size(); ++d) {
        ASSERT_TRUE(IsDecimal(dims[d])) << text;
        ASSERT_GE((*shapes)[s][d], 0) << text;
        ASSERT_EQ((*shapes)[s][d],
                  std::strtoll(
                      std::string(absl::StripAsciiWhitespace(dims[d])).c_str(),
                      nullptr, 10))
            << text;
      }
    }
  }
  std::cout << "input shapes: " << kOptionExecutions << " executions from "
            << seeds.size() << " seeds, " << accepted << " accepted, "
            << rejected << " rejected\n";
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

TEST(CliInputsFuzz, DtypesAndDevicesAreKnownNamesOrNamedErrors) {
  const std::vector<std::string> dtype_seeds = {"float32", "torch.bfloat16",
                                                "float32;int64", "BOOL"};
  const std::vector<std::string> device_seeds = {"cpu", "meta", "cuda:0",
                                                 "cpu:1", "privateuseone"};
  std::mt19937_64 rng(7);
  int dtypes_accepted = 0, devices_accepted = 0;
  for (int i = 0; i < kOptionExecutions; ++i) {
    const std::string dtype_text =
        MutateText(dtype_seeds[i % dtype_seeds.size()], rng);
    const auto dtypes = ParseDtypes(dtype_text);
    if (dtypes.ok()) {
      ++dtypes_accepted;
      const std::size_t inputs =
          dtype_text.empty()
              ? 0
              : std::vector<absl::string_view>(absl::StrSplit(dtype_text, ';'))
                    .size();
      ASSERT_EQ(dtypes->size(), inputs) << dtype_text;
    } else {
      ASSERT_TRUE(
          absl::StartsWith(dtypes.status().message(), "unknown --dtype '"))
          << dtypes.status();
    }
    const std::string device_text =
        MutateText(device_seeds[i % device_seeds.size()], rng);
    const auto device = ParseDevice(device_text);
    if (device.ok()) {
      ++devices_accepted;
    } else {
      ASSERT_TRUE(absl::StartsWith(device.status().message(), "bad --device '"))
          << device.status();
    }
  }
  std::cout << "dtypes: " << kOptionExecutions << " executions from "
            << dtype_seeds.size() << " seeds, " << dtypes_accepted
            << " accepted; devices: " << kOptionExecutions
            << " executions from " << device_seeds.size() << " seeds, "
            << devices_accepted << " accepted\n";
  EXPECT_GT(dtypes_accepted, 0);
  EXPECT_GT(devices_accepted, 0);
}

std::string MutateArchive(std::string bytes, std::mt19937_64& rng) {
  const std::size_t size = bytes.size();
  const std::size_t at = rng() % size;
  const std::size_t length = std::min<std::size_t>(1 + rng() % 64, size - at);
  switch (rng() % 5) {
    case 0:  // flip a few bits
      for (int flips = 1 + rng() % 8; flips > 0; --flips) {
        bytes[rng() % size] ^= static_cast<char>(1 << (rng() % 8));
      }
      break;
    case 1:  // random bytes over a range
      for (std::size_t i = 0; i < length; ++i) {
        bytes[at + i] = static_cast<char>(rng() % 256);
      }
      break;
    case 2:  // zeros over a range
      std::fill_n(bytes.begin() + at, length, '\0');
      break;
    case 3:  // a range removed
      bytes.erase(at, length);
      break;
    default:  // truncated
      bytes.resize(at);
      break;
  }
  return bytes;
}

// Small models, so that most of each archive is structure (zip records,
// code, pickles) rather than weight bytes, which the loader cannot check.
std::vector<std::string> SavedSeedArchives() {
  examples::ScriptModuleBuilder b;
  const std::vector<torch::jit::Module> models = {
      b.Sequential({b.Linear(4, 8), b.ReLU(), b.Linear(8, 2)}),
      b.Sequential({b.Conv2d(3, 4, 3), b.BatchNorm2d(4), b.ReLU(),
                    b.AdaptiveAvgPool2d(1), b.Flatten(), b.Linear(4, 2)}),
  };
  std::vector<std::string> archives;
  for (const torch::jit::Module& model : models) {
    std::ostringstream saved;
    model.save(saved);
    archives.push_back(saved.str());
  }
  return archives;
}

TEST(CliInputsFuzz, CorruptedTorchScriptArchivesGiveNamedErrors) {
  const std::vector<std::string> seeds = SavedSeedArchives();
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir =
      tmp != nullptr ? tmp : std::filesystem::temp_directory_path();
  const std::string path = (dir / "fuzzed_model.pt").string();
  const auto write = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  std::size_t seed_bytes = 0;
  for (const std::string& seed : seeds) {
    write(seed);
    ASSERT_TRUE(LoadScriptModuleFile(path).ok());
    seed_bytes += seed.size();
  }

  std::mt19937_64 rng(1130);
  int loaded = 0, rejected = 0;
  for (int i = 0; i < kArchiveExecutions; ++i) {
    write(MutateArchive(seeds[i % seeds.size()], rng));
    const auto module = LoadScriptModuleFile(path);
    if (module.ok()) {
      ++loaded;  // the damage hit bytes the loader does not check
      continue;
    }
    ++rejected;
    ASSERT_TRUE(absl::StartsWith(
        module.status().message(),
        path + " is not a TorchScript model file (torch.jit.save): "))
        << module.status();
    // One line, whatever the loader's message was.
    ASSERT_FALSE(absl::StrContains(module.status().message(), "\n"))
        << module.status();
  }
  std::cout << "TorchScript archives: " << kArchiveExecutions
            << " executions from " << seeds.size() << " seeds (" << seed_bytes
            << " bytes), " << loaded << " still loaded, " << rejected
            << " rejected\n";
  EXPECT_GT(rejected, 0);
}

TEST(CliInputs, MissingAndNonArchiveFilesAreNamed) {
  EXPECT_EQ(LoadScriptModuleFile("/no/such/model.pt").status().message(),
            "no such file: /no/such/model.pt");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path =
      ((tmp != nullptr ? std::filesystem::path(tmp)
                       : std::filesystem::temp_directory_path()) /
       "text.pt")
          .string();
  std::ofstream(path) << "not a zip archive";
  const auto loaded = LoadScriptModuleFile(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::StartsWith(
      loaded.status().message(),
      path + " is not a TorchScript model file (torch.jit.save): "))
      << loaded.status();
  EXPECT_FALSE(absl::StrContains(loaded.status().message(), "\n"));
}

}  // namespace
}  // namespace torchscan::cli
