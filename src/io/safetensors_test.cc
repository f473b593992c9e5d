#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "support/paths.h"

namespace mcinfer::io {
namespace {

namespace fs = std::filesystem;

// Writes a safetensors file from a raw header string and a data section, so that tests can
// describe lying headers byte for byte.
void write_raw(const fs::path& path, const std::string& header, const std::string& data,
               std::uint64_t header_len_override = 0) {
  std::ofstream out(path, std::ios::binary);
  std::uint64_t len = header_len_override ? header_len_override : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xFF));
  out << header << data;
}

std::string padded(std::string header) {
  while (header.size() % 8) header += ' ';
  return header;
}

std::string floats(std::initializer_list<float> values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

std::string error_of(const fs::path& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class SafetensorsTest : public ::testing::Test {
 protected:
  fs::path dir = testing::scratch_dir("safetensors");
  fs::path file = dir / "model.safetensors";
};

TEST_F(SafetensorsTest, ReadsValidFileWithoutCopy) {
  // Header padded with spaces to 8 bytes, as the reference writer does.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"I64","shape":[1],"data_offsets":[16,24]}})";
  while (header.size() % 8) header += ' ';
  std::string data = floats({1, 2, 3, 4}) + std::string("\x07\0\0\0\0\0\0\0", 8);
  write_raw(file, header, data);
  auto st = SafetensorsFile::open(file);
  ASSERT_EQ(st->tensors().size(), 2u);
  const TensorView* a = st->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(reinterpret_cast<const float*>(a->data)[3], 4.0f);
  EXPECT_EQ(a->data, st->file().data() + 8 + header.size());  // a view into the mapping
  EXPECT_EQ(*reinterpret_cast<const std::int64_t*>(st->find("b")->data), 7);
  EXPECT_EQ(st->metadata().at("format"), "pt");
  EXPECT_EQ(st->find("c"), nullptr);
}

struct BadCase {
  const char* name;
  std::string header;
  std::string data;
  std::uint64_t header_len_override;
  const char* expected;
};

TEST_F(SafetensorsTest, RefusesEveryInconsistency) {
  const std::string f16 = floats({1, 2, 3, 4});
  std::vector<BadCase> cases = {
      {"header length beyond file", "{}", "", 1000, "runs past the end of the file"},
      {"absurd header length", "{}", "", 1ull << 40, "exceeds"},
      {"invalid json", "{\"a\": ", "", 0, "invalid JSON"},
      {"not an object", "[1,2]", "", 0, "not a JSON object"},
      {"unknown dtype", R"({"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}})", "x", 0,
       "tensor 'a': unknown dtype 'F8'"},
      {"negative shape", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", f16, 0,
       "tensor 'a': shape holds a negative size"},
      {"overflowing shape",
       R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", f16, 0,
       "overflows"},
      {"offsets past data", R"({"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", f16, 0,
       "run past the end of the data"},
      {"size mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", f16, 0,
       "needs 12 bytes but data_offsets give 16"},
      {"reversed offsets", R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", f16, 0,
       "reversed"},
      {"misaligned", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})", f16, 0,
       "not aligned"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       f16, 0, "overlap"},
      {"missing offsets", R"({"a":{"dtype":"F32","shape":[1]}})", f16, 0, "data_offsets"},
      {"non-integer shape", R"({"a":{"dtype":"F32","shape":["x"],"data_offsets":[0,4]}})", f16, 0,
       "non-integer"},
      {"metadata not strings", R"({"__metadata__":{"a":1}})", "", 0, "__metadata__"},
  };
  for (const auto& c : cases) {
    // Pad headers to a multiple of 4 so only the intended fault trips.
    std::string header = c.header;
    while ((8 + header.size()) % 4) header += ' ';
    write_raw(file, header, c.data, c.header_len_override);
    std::string msg = error_of(file);
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.name << ": got '" << msg << "'";
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << c.name << ": " << msg;
  }
}

TEST_F(SafetensorsTest, TruncatedFile) {
  std::ofstream(file, std::ios::binary) << "abc";
  EXPECT_NE(error_of(file).find("truncated"), std::string::npos);
}

TEST_F(SafetensorsTest, CheckpointRefusesPickle) {
  std::ofstream(dir / "pytorch_model.bin") << "pickle";
  fs::remove(file);
  try {
    Checkpoint::open(dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not load pickle"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("safe_serialization=True"), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, ShardedIndexIsCheckedBothWays) {
  fs::remove(file);
  std::string h1 = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string h2 = R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  write_raw(dir / "part1.safetensors", padded(h1), floats({1}));
  write_raw(dir / "part2.safetensors", padded(h2), floats({2}));
  auto index = dir / "model.safetensors.index.json";
  std::ofstream(index) << R"({"weight_map":{"a":"part1.safetensors","b":"part2.safetensors"}})";
  Checkpoint ck = Checkpoint::open(dir);
  ASSERT_NE(ck.find("b"), nullptr);
  EXPECT_EQ(*reinterpret_cast<const float*>(ck.find("b")->data), 2.0f);
  EXPECT_EQ(ck.files().size(), 2u);

  auto expect_error = [&](const std::string& index_text, const std::string& expected) {
    std::ofstream(index, std::ios::trunc) << index_text;
    try {
      Checkpoint::open(dir);
      ADD_FAILURE() << "no error for " << index_text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"weight_map":{"a":"part1.safetensors","b":"part1.safetensors"}})",
               "tensor 'b' is listed for part1");
  expect_error(R"({"weight_map":{"a":"../part1.safetensors"}})",
               "not a file in the model directory");
  expect_error(R"({"weight_map":{"a":"part1.safetensors","b":7}})", "is not a file name");
  std::string h3 =
      R"({"c":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"d":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  write_raw(dir / "part3.safetensors", padded(h3), floats({3, 4}));
  expect_error(R"({"weight_map":{"c":"part3.safetensors"}})", "tensor 'd' is not listed");
}

}  // namespace
}  // namespace mcinfer::io
