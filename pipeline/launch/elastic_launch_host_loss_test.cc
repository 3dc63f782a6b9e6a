// The race the rendezvous host's end opens: the host's launcher ends (and
// its store with it) as soon as its own workers finished, while another
// node's workers may still be exiting from the same last collective. Both
// launchers run in this process with shell workers; the guest's worker
// exits only once its launcher has said that it lost the host, so the race
// is taken the same way on every run, however busy the machine.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/launch/elastic_launch.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

RendezvousOptions TwoNodes(int port) {
  RendezvousOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.nodes = {1, 2, true};
  options.config_text = "trainer { epochs: 1 }";
  // The round forms when both joined; a last call would only slow it.
  options.last_call = std::chrono::hours(1);
  return options;
}

LaunchOptions ShellWorker(const std::string& script) {
  LaunchOptions launch;
  launch.command = {"/bin/sh", "-c", script};
  return launch;
}

// Waits until something listens on the loopback port: the first launcher
// to listen there is the rendezvous host.
void WaitForListener(int port) {
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool listening =
        ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    if (listening) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Sends this process's standard error (where the launchers report) to a
// file the workers can read, for the life of the object.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) : path_(path) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(file, STDERR_FILENO);
    ::close(file);
  }
  ~StderrToFile() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  std::string Text() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

TEST(ElasticLaunchHostLossTest, AGuestWhoseWorkersOutliveTheHostFinishesWell) {
  const std::string log = absl::StrCat(::testing::TempDir(), "/launchers.log");
  StderrToFile launchers(log);
  const RendezvousOptions options = TwoNodes(testing::FreePort());
  auto host = std::async(std::launch::async, [&] {
    return LaunchElastic(options, ShellWorker("exit 0"), /*max_restarts=*/0);
  });
  WaitForListener(options.port);
  // Waits (at most 10 minutes, only so that a regression cannot hang) for
  // its launcher's word that the host is gone, then takes 3 s (three of the
  // launcher's watch polls) to finish the job.
  const std::string guest_worker = absl::StrCat(
      "for i in $(seq 6000); do grep -q 'to finish before they are stopped' '", log,
      "' && sleep 3 && exit 0; sleep 0.1; done; exit 3");
  auto guest = std::async(std::launch::async, [&] {
    return LaunchElastic(options, ShellWorker(guest_worker), /*max_restarts=*/0);
  });
  const absl::Status hosted = host.get();
  const absl::Status guested = guest.get();
  const std::string said = launchers.Text();
  EXPECT_TRUE(hosted.ok()) << hosted << "\n" << said;
  EXPECT_TRUE(guested.ok()) << guested << "\n" << said;
  EXPECT_THAT(said, HasSubstr("this node's workers finished the job"));
}

}  // namespace
}  // namespace pipeline
