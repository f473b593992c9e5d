// Plugins that are not usable, for the loader's tests: GetPjrtApi returns a table of version
// FAKE_MAJOR.FAKE_MINOR whose function pointers are all null (FAKE_NO_API: no GetPjrtApi at all).
#include <cstring>

#include "pjrt_c_api.h"

#ifdef FAKE_NO_API
extern "C" int NotAPjrtPlugin() { return 0; }
#else
extern "C" const PJRT_Api* GetPjrtApi() {
  static PJRT_Api api;
  std::memset(&api, 0, sizeof(api));
  api.struct_size = sizeof(api);
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = FAKE_MAJOR;
  api.pjrt_api_version.minor_version = FAKE_MINOR;
  return &api;
}
#endif
