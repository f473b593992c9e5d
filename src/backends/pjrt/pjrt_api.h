#pragma once
// A PJRT plugin (a shared library exporting GetPjrtApi, third_party/pjrt/pjrt_c_api.h) seen as
// C++ objects that own what they create: the loaded plugin, one client, device buffers and
// compiled executables. Every call's PJRT_Error becomes an mcinfer::Error naming the plugin and
// the step; nothing here aborts.
//
// Plugins are untrusted input: the file is checked before dlopen (exists, an ELF shared object),
// the API version and the size of its function table before any call, and every function
// pointer we use before it is called. Some plugins abort the process on malformed requests (an
// empty CompileOptionsProto is a CHECK failure in XLA's CPU plugin), so the requests built here
// are always complete.
//
// Threading: a Client and its Executables may be used from any thread (PJRT clients are thread-
// safe); a DeviceBuffer belongs to one thread at a time.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

struct PJRT_Api;
struct PJRT_Buffer;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_Error;
struct PJRT_LoadedExecutable;

namespace mcinfer::pjrt {

// Oldest PJRT C API minor version (major 0) we call: every struct and function we use exists
// from here on (checked by size of the plugin's table as well).
inline constexpr int kMinApiMinor = 54;

// The loaded plugin. Never unloaded: plugins start threads that outlive their clients, and
// dlclose under them crashes; the handle lives until the process ends.
class Plugin {
 public:
  // Throws Error: missing file, not a shared object, no GetPjrtApi, an API version or function
  // table we cannot use, or a failed PJRT_Plugin_Initialize.
  static std::shared_ptr<const Plugin> load(const std::filesystem::path& path);

  const PJRT_Api* api() const { return api_; }
  const std::filesystem::path& path() const { return path_; }
  int api_major() const { return major_; }
  int api_minor() const { return minor_; }
  // Throws Error "PJRT plugin PATH: WHAT: message (code)" when `error` is not null, after
  // destroying it.
  void check(PJRT_Error* error, std::string_view what) const;

 private:
  Plugin() = default;
  const PJRT_Api* api_ = nullptr;
  std::filesystem::path path_;
  int major_ = 0, minor_ = 0;
};

enum class ElementType { kF32, kBf16, kS32 };

// A buffer on one device; destroyed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::shared_ptr<const Plugin> plugin, PJRT_Buffer* buffer)
      : plugin_(std::move(plugin)), buffer_(buffer) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();
  PJRT_Buffer* get() const { return buffer_; }
  // Copies the whole buffer into `out` (`bytes` long, checked against the buffer's size).
  void to_host(void* out, std::size_t bytes) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  PJRT_Buffer* buffer_ = nullptr;
};

struct DeviceInfo {
  PJRT_Device* device = nullptr;
  int id = 0;
  std::string kind;                // "cpu", "NVIDIA H200", "TPU v4" ...
  std::string description;         // the plugin's own one-line description
  std::int64_t memory_limit = -1;  // bytes; -1 where the plugin does not say
  std::int64_t memory_in_use = -1;
};

class Executable;

// One client of the plugin and its addressable devices.
class Client {
 public:
  // `cpu_devices` > 0 asks a CPU plugin for that many devices (option cpu_device_count);
  // other plugins ignore it.
  Client(std::shared_ptr<const Plugin> plugin, int cpu_devices);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Plugin& plugin() const { return *plugin_; }
  const std::string& platform() const { return platform_; }
  const std::string& platform_version() const { return platform_version_; }
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  // Fresh memory figures of device `index` (the plugin's, where it keeps them).
  DeviceInfo memory_of(std::size_t index) const;

  // Compiles StableHLO text (MLIR) into one executable that runs on any of the devices.
  // Throws Error with the plugin's message (StableHLO that does not verify is an ordinary error).
  std::shared_ptr<const Executable> compile(const std::string& stablehlo) const;

  // Copies a host array to device `index`; `host` may be reused when this returns.
  DeviceBuffer upload(const void* host, ElementType type, std::span<const std::int64_t> dims,
                      std::size_t index) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::string platform_, platform_version_;
  std::vector<DeviceInfo> devices_;
};

class Executable {
 public:
  Executable(std::shared_ptr<const Plugin> plugin, PJRT_LoadedExecutable* executable,
             std::size_t outputs)
      : plugin_(std::move(plugin)), executable_(executable), outputs_(outputs) {}
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  std::size_t outputs() const { return outputs_; }
  // Runs on `device` with `args` (buffers of that device) and waits for completion.
  std::vector<DeviceBuffer> execute(PJRT_Device* device, std::span<PJRT_Buffer* const> args) const;

 private:
  friend class Client;  // sets outputs_ once the plugin has said it
  std::shared_ptr<const Plugin> plugin_;
  PJRT_LoadedExecutable* executable_ = nullptr;
  std::size_t outputs_ = 0;
};

}  // namespace mcinfer::pjrt
