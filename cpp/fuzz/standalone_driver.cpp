// standalone_driver.cpp — runs a libFuzzer-style target without libFuzzer
// (g++ has none): each seed file as it is, then a bounded number of inputs
// mutated from the seeds by a seeded generator — bytes changed, inserted,
// deleted, duplicated, spliced from another seed, or the input cut short —
// or, without seed files, random bytes.
// Not coverage-guided (clang's libFuzzer is, for long runs: fuzz/README.md);
// it is what CI runs under ASan + UBSan, deterministic for a given --seed.
//
//   fuzz_ftrace --runs N --seed S [--max-len BYTES] SEED_FILE...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

const char kAlphabet[] = " -[]():=.#0123456789abcdefxyz_|\t\r\n\xff";

std::string mutate(const std::vector<std::string>& seeds, std::mt19937_64& rng, std::size_t max_len) {
  std::string s = seeds[rng() % seeds.size()];
  if (s.size() > max_len) {  // a window of a long seed
    const std::size_t at = rng() % (s.size() - max_len);
    s = s.substr(at, max_len);
  }
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 7) {
      case 0:
        if (!s.empty()) s[at] = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
        break;
      case 1:
        if (!s.empty()) s[at] = static_cast<char>(rng());
        break;
      case 2:
        s.insert(at, 1 + rng() % 4, kAlphabet[rng() % (sizeof(kAlphabet) - 1)]);
        break;
      case 3:
        s.erase(at, 1 + rng() % 24);
        break;
      case 4:
        s.insert(at, s.substr(at, 1 + rng() % 64));
        break;
      case 5: {
        const std::string& other = seeds[rng() % seeds.size()];
        if (!other.empty()) s.insert(at, other.substr(rng() % other.size(), 1 + rng() % 200));
        break;
      }
      default:
        s.resize(at);
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 10000;
  std::uint64_t seed = 1;
  std::size_t max_len = 4096;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--max-len") && i + 1 < argc) {
      max_len = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::ifstream f(argv[i], std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "cannot read seed file %s\n", argv[i]);
        return 2;
      }
      seeds.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
  }
  for (const std::string& s : seeds) LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  std::mt19937_64 rng(seed);
  for (long k = 0; k < runs; ++k) {
    // Without seeds (targets that decode choices from the bytes): random bytes.
    std::string input(seeds.empty() ? 1 + rng() % max_len : 0, '\0');
    for (char& c : input) c = static_cast<char>(rng());
    if (!seeds.empty()) input = mutate(seeds, rng, max_len);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  }
  std::printf("%ld inputs from %zu seeds (seed %llu): no crash, no invariant violated\n", runs, seeds.size(),
              static_cast<unsigned long long>(seed));
  return 0;
}
