// A stand-in for libFuzzer's main() in builds without clang (the normal gcc
// build, and --config=asan): it runs every seed input named on the command
// line, then random mutations of the seeds (bit flips, interesting values,
// byte inserts and deletes, truncations, splices of two seeds) for a bounded
// time, from a fixed random seed, so a failure reproduces. Without coverage
// feedback it finds less than libFuzzer (--config=fuzz), but it runs in every
// `bazel test //...` and keeps the targets and their seeds honest.
//
// A target fails the test by crashing, by aborting (FUZZ_CHECK) or by letting
// an exception escape. The input that did it is written to
// $TEST_UNDECLARED_OUTPUTS_DIR (or the working folder) as crash-<hash>, and
// replays with `<target binary> <that file>`.
//
// Environment: FUZZ_SECONDS (mutation time, default 10; 0 replays the seeds
// only), FUZZ_SEED (default 1), FUZZ_MAX_LEN (bytes, default 1 MiB),
// FUZZ_INPUT_TIMEOUT (seconds one input may take, default 20).

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
// Present when a sanitizer runtime is linked (--config=asan): lets the input
// be saved before ASan or UBSan ends the process.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

// What the signal handlers need, set up before any input runs: they may only
// make async-signal-safe calls, so the file name is formatted in advance.
const std::string* current_input = nullptr;
char crash_path[4096];
bool crash_saved = false;

void SaveCurrentInput() {
  if (crash_saved || current_input == nullptr) return;
  crash_saved = true;
  const int fd = ::open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t written = 0;
    while (written < current_input->size()) {
      const ssize_t n = ::write(fd, current_input->data() + written, current_input->size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  const char message[] = "\nfuzz driver: the input that failed was saved to ";
  (void)!::write(2, message, sizeof(message) - 1);
  (void)!::write(2, crash_path, std::strlen(crash_path));
  (void)!::write(2, "\n", 1);
}

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM};
struct sigaction previous_actions[sizeof(kFatalSignals) / sizeof(kFatalSignals[0])];

void OnFatalSignal(int signal_number) {
  if (signal_number == SIGALRM) {
    const char message[] = "\nfuzz driver: one input ran past FUZZ_INPUT_TIMEOUT";
    (void)!::write(2, message, sizeof(message) - 1);
  }
  SaveCurrentInput();
  // Hand the signal back to whoever had it (ASan's report, or the default
  // action): a fault re-executes the instruction, abort() raises again.
  for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
    if (kFatalSignals[i] == signal_number) sigaction(signal_number, &previous_actions[i], nullptr);
  }
  if (signal_number == SIGALRM) ::raise(SIGABRT);
}

void InstallHandlers() {
  for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
    struct sigaction action {};
    action.sa_handler = OnFatalSignal;
    sigemptyset(&action.sa_mask);
    sigaction(kFatalSignals[i], &action, &previous_actions[i]);
  }
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(SaveCurrentInput);
}

int64_t EnvOr(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::strtoll(value, nullptr, 10);
}

// FNV-1a: names a crash file after its contents.
uint64_t Hash(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

std::vector<std::string> ReadSeeds(int argc, char** argv) {
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-", 0) == 0) continue;  // libFuzzer flags mean nothing here
    std::vector<std::filesystem::path> files;
    std::error_code error;
    if (std::filesystem::is_directory(arg, error)) {
      // Only the folder's own files: crash reproducers live in a sub-folder
      // and are not run by default.
      for (const auto& entry : std::filesystem::directory_iterator(arg, error)) {
        if (entry.is_regular_file(error)) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(arg);
    }
    for (const auto& file : files) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "fuzz driver: cannot read %s\n", file.c_str());
        std::exit(2);
      }
      seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  return seeds;
}

class Mutator {
 public:
  Mutator(const std::vector<std::string>& seeds, uint64_t seed, size_t max_len)
      : seeds_(seeds), random_(seed), max_len_(max_len) {}

  std::string Next() {
    std::string input = seeds_[Below(seeds_.size())];
    const int rounds = 1 + static_cast<int>(Below(4));
    for (int i = 0; i < rounds; ++i) MutateOnce(input);
    if (input.size() > max_len_) input.resize(max_len_);
    return input;
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(random_() % n); }

  // Values that sit on the edges of sizes, counts and signedness.
  uint64_t Interesting() {
    static constexpr uint64_t kValues[] = {0,          1,          0x7f,       0x80,
                                           0xff,       0x100,      0x7fff,     0x8000,
                                           0xffff,     0x10000,    0x7fffffff, 0x80000000,
                                           0xffffffff, 0x100000000, ~uint64_t{0},
                                           0x7fffffffffffffff};
    return kValues[Below(std::size(kValues))];
  }

  void MutateOnce(std::string& input) {
    switch (Below(9)) {
      case 0:  // flip one bit
        if (!input.empty()) input[Below(input.size())] ^= static_cast<char>(1u << Below(8));
        break;
      case 1:  // one random byte
        if (!input.empty()) input[Below(input.size())] = static_cast<char>(random_());
        break;
      case 2: {  // insert 1..8 random bytes
        std::string bytes(1 + Below(8), '\0');
        for (char& c : bytes) c = static_cast<char>(random_());
        input.insert(Below(input.size() + 1), bytes);
        break;
      }
      case 3: {  // delete up to 16 bytes
        if (input.empty()) break;
        const size_t at = Below(input.size());
        input.erase(at, 1 + Below(std::min<size_t>(16, input.size() - at)));
        break;
      }
      case 4:  // truncate
        input.resize(Below(input.size() + 1));
        break;
      case 5: {  // an edge value, 1, 2, 4 or 8 bytes, either byte order
        const size_t width = size_t{1} << Below(4);
        if (input.size() < width) break;
        const size_t at = Below(input.size() - width + 1);
        const uint64_t value = Interesting();
        const bool big_endian = Below(2) == 0;
        for (size_t i = 0; i < width; ++i) {
          const size_t shift = 8 * (big_endian ? width - 1 - i : i);
          input[at + i] = static_cast<char>(value >> shift);
        }
        break;
      }
      case 6: {  // splice: a prefix of this, the rest of another seed
        const std::string& other = seeds_[Below(seeds_.size())];
        input = input.substr(0, Below(input.size() + 1)) + other.substr(Below(other.size() + 1));
        break;
      }
      case 7: {  // a chunk of another seed inserted anywhere (carries tokens, headers)
        const std::string& other = seeds_[Below(seeds_.size())];
        if (other.empty()) break;
        const size_t from = Below(other.size());
        input.insert(Below(input.size() + 1), other.substr(from, 1 + Below(64)));
        break;
      }
      case 8: {  // repeat a chunk of itself
        if (input.empty()) break;
        const size_t from = Below(input.size());
        const std::string chunk = input.substr(from, 1 + Below(256));
        input.insert(Below(input.size() + 1), chunk);
        break;
      }
    }
  }

  const std::vector<std::string>& seeds_;
  std::mt19937_64 random_;
  size_t max_len_;
};

// Runs one input; false when an exception escaped the target.
bool RunOne(const std::string& input, const std::string& output_dir, unsigned timeout) {
  current_input = &input;
  std::snprintf(crash_path, sizeof(crash_path), "%s/crash-%016llx", output_dir.c_str(),
                static_cast<unsigned long long>(Hash(input)));
  if (timeout > 0) ::alarm(timeout);
  bool ok = true;
  try {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz driver: an exception escaped the target: %s\n", e.what());
    ok = false;
  } catch (...) {
    std::fprintf(stderr, "fuzz driver: an exception of unknown type escaped the target\n");
    ok = false;
  }
  if (timeout > 0) ::alarm(0);
  if (!ok) SaveCurrentInput();
  current_input = nullptr;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  const std::vector<std::string> seeds = ReadSeeds(argc, argv);
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz driver: no seed inputs given (files or folders as arguments)\n");
    return 2;
  }
  const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  const std::string output_dir = outputs != nullptr ? outputs : ".";
  const int64_t seconds = EnvOr("FUZZ_SECONDS", 10);
  const uint64_t random_seed = static_cast<uint64_t>(EnvOr("FUZZ_SEED", 1));
  const size_t max_len = static_cast<size_t>(EnvOr("FUZZ_MAX_LEN", 1 << 20));
  const unsigned timeout = static_cast<unsigned>(EnvOr("FUZZ_INPUT_TIMEOUT", 20));
  InstallHandlers();

  for (const std::string& seed : seeds) {
    if (!RunOne(seed, output_dir, timeout)) return 1;
  }
  std::fprintf(stderr, "fuzz driver: %zu seed inputs ran\n", seeds.size());

  Mutator mutator(seeds, random_seed, max_len);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(seconds);
  int64_t executions = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string input = mutator.Next();
    if (!RunOne(input, output_dir, timeout)) return 1;
    ++executions;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "fuzz driver: %lld mutated inputs in %.1f s (%.0f/s), FUZZ_SEED=%llu, no failure\n",
               static_cast<long long>(executions), elapsed,
               elapsed > 0 ? executions / elapsed : 0.0,
               static_cast<unsigned long long>(random_seed));
  return 0;
}
