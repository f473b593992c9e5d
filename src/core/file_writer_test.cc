#include "core/file_writer.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "core/error.h"
#include "support/paths.h"

namespace mcinfer {
namespace {

TEST(AtomicFile, AppearsOnlyOnCommit) {
  auto dir = testing::scratch_dir("atomic_commit");
  auto target = dir / "out.csv";
  {
    AtomicFile file(target);
    file.writer().write("id,x\n1,2\n");
    EXPECT_FALSE(std::filesystem::exists(target));
    file.commit();
  }
  EXPECT_EQ(testing::read_file(target), "id,x\n1,2\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
}

TEST(AtomicFile, AbandonedLeavesNothing) {
  auto dir = testing::scratch_dir("atomic_abandon");
  auto target = dir / "out.csv";
  {
    AtomicFile file(target);
    file.writer().write("partial");
  }
  EXPECT_FALSE(std::filesystem::exists(target));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 0);
}

TEST(FileWriter, AppendKeepsOffset) {
  auto dir = testing::scratch_dir("writer_append");
  auto path = dir / "shard.csv";
  {
    auto w = FileWriter::open(path, FileWriter::Mode::kTruncate);
    w.write("abc");
    w.close();
  }
  auto w = FileWriter::open(path, FileWriter::Mode::kAppend);
  EXPECT_EQ(w.offset(), 3u);
  w.write("de");
  EXPECT_EQ(w.offset(), 5u);
  w.close();
  EXPECT_EQ(testing::read_file(path), "abcde");
}

TEST(FileWriter, FileSizeLimitIsAnErrorNamingTheFile) {
  auto dir = testing::scratch_dir("writer_limit");
  auto path = dir / "big.bin";
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  setrlimit(RLIMIT_FSIZE, &small);
  std::string message;
  try {
    auto w = FileWriter::open(path, FileWriter::Mode::kTruncate);
    w.write(std::string(3 << 20, 'x'));
    w.sync();
  } catch (const Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find("big.bin"), std::string::npos) << message;
  EXPECT_NE(message.find("write failed"), std::string::npos) << message;
}

}  // namespace
}  // namespace mcinfer
