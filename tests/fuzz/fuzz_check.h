#ifndef TESTS_FUZZ_FUZZ_CHECK_H_
#define TESTS_FUZZ_FUZZ_CHECK_H_

// FUZZ_CHECK(condition, message): what a fuzz target asserts about its
// output. A failure aborts, which both libFuzzer and our own driver report
// as a crash and save the input for.

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, message)                                          \
  do {                                                                          \
    if (!(condition)) {                                                         \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %s\n", __FILE__,      \
                   __LINE__, #condition, std::string(message).c_str());         \
      std::abort();                                                             \
    }                                                                           \
  } while (false)

#endif  // TESTS_FUZZ_FUZZ_CHECK_H_
