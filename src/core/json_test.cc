#include "core/json.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace mcinfer {
namespace {

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonObject, MessagesNameFileAndField) {
  Json j = parse_json(R"({"hidden_size": "big", "layers": 3, "eps": 1e-12})", "config.json");
  JsonObject obj(j, "m/config.json");
  EXPECT_EQ(obj.get_int("layers"), 3);
  EXPECT_DOUBLE_EQ(obj.get_number("eps"), 1e-12);
  EXPECT_EQ(error_of([&] { obj.get_int("hidden_size"); }),
            "m/config.json: field 'hidden_size': expected an integer, got string");
  EXPECT_EQ(error_of([&] { obj.get_int("vocab_size"); }),
            "m/config.json: field 'vocab_size': missing");
  EXPECT_FALSE(obj.opt_int("vocab_size").has_value());
}

TEST(Json, InvalidJsonNamesOrigin) {
  auto msg = error_of([] { parse_json("{\"a\": ", "x/config.json"); });
  EXPECT_EQ(msg.rfind("x/config.json: invalid JSON", 0), 0u) << msg;
}

}  // namespace
}  // namespace mcinfer
