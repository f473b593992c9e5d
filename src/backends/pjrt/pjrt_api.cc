#include "backends/pjrt/pjrt_api.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "pjrt_c_api.h"

namespace mcinfer::pjrt {
namespace {

// Every PJRT function this file calls: a plugin whose table ends before one of them, or holds
// null there, is refused at load (a call through it would crash).
struct UsedFunction {
  std::size_t offset;
  const char* name;
};
#define MCINFER_PJRT_FN(name) \
  UsedFunction { offsetof(PJRT_Api, name), #name }
constexpr UsedFunction kUsed[] = {
    MCINFER_PJRT_FN(PJRT_Error_Destroy),
    MCINFER_PJRT_FN(PJRT_Error_Message),
    MCINFER_PJRT_FN(PJRT_Error_GetCode),
    MCINFER_PJRT_FN(PJRT_Plugin_Initialize),
    MCINFER_PJRT_FN(PJRT_Event_Destroy),
    MCINFER_PJRT_FN(PJRT_Event_Await),
    MCINFER_PJRT_FN(PJRT_Client_Create),
    MCINFER_PJRT_FN(PJRT_Client_Destroy),
    MCINFER_PJRT_FN(PJRT_Client_PlatformName),
    MCINFER_PJRT_FN(PJRT_Client_PlatformVersion),
    MCINFER_PJRT_FN(PJRT_Client_AddressableDevices),
    MCINFER_PJRT_FN(PJRT_Client_Compile),
    MCINFER_PJRT_FN(PJRT_Client_BufferFromHostBuffer),
    MCINFER_PJRT_FN(PJRT_Device_GetDescription),
    MCINFER_PJRT_FN(PJRT_Device_MemoryStats),
    MCINFER_PJRT_FN(PJRT_DeviceDescription_Id),
    MCINFER_PJRT_FN(PJRT_DeviceDescription_Kind),
    MCINFER_PJRT_FN(PJRT_DeviceDescription_ToString),
    MCINFER_PJRT_FN(PJRT_LoadedExecutable_Destroy),
    MCINFER_PJRT_FN(PJRT_LoadedExecutable_GetExecutable),
    MCINFER_PJRT_FN(PJRT_LoadedExecutable_Execute),
    MCINFER_PJRT_FN(PJRT_Executable_NumOutputs),
    MCINFER_PJRT_FN(PJRT_Executable_Destroy),
    MCINFER_PJRT_FN(PJRT_Buffer_Destroy),
    MCINFER_PJRT_FN(PJRT_Buffer_ToHostBuffer),
};
#undef MCINFER_PJRT_FN

// The first bytes of an ELF file; anything else given as a plugin is refused before dlopen.
bool is_elf(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::memcmp(magic,
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

template <typename Args>
Args make_args(std::size_t size) {
  Args args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = size;
  return args;
}

std::string_view view(const char* data, std::size_t size) {
  return data == nullptr ? std::string_view() : std::string_view(data, size);
}

// Serialized xla.CompileOptionsProto: executable_build_options (field 3) = {num_replicas (4) = 1,
// num_partitions (5) = 1}, compile_portable_executable (4) = true, so that one executable runs
// on whichever device execute names. An empty proto aborts XLA's CPU plugin (a CHECK).
constexpr unsigned char kCompileOptions[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};

PJRT_Buffer_Type buffer_type(ElementType type) {
  switch (type) {
    case ElementType::kF32:
      return PJRT_Buffer_Type_F32;
    case ElementType::kBf16:
      return PJRT_Buffer_Type_BF16;
    case ElementType::kS32:
      return PJRT_Buffer_Type_S32;
  }
  return PJRT_Buffer_Type_INVALID;
}

void await_event(const Plugin& plugin, PJRT_Event* event, std::string_view what) {
  if (event == nullptr) return;
  auto await = make_args<PJRT_Event_Await_Args>(PJRT_Event_Await_Args_STRUCT_SIZE);
  await.event = event;
  PJRT_Error* error = plugin.api()->PJRT_Event_Await(&await);
  auto destroy = make_args<PJRT_Event_Destroy_Args>(PJRT_Event_Destroy_Args_STRUCT_SIZE);
  destroy.event = event;
  plugin.api()->PJRT_Event_Destroy(&destroy);
  plugin.check(error, what);
}

}  // namespace

std::shared_ptr<const Plugin> Plugin::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail("PJRT plugin {}: no such file", path.string());
  if (!is_elf(path))
    fail("PJRT plugin {}: not a shared library (no ELF header); give the plugin's .so file",
         path.string());
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) fail("PJRT plugin {}: cannot be loaded: {}", path.string(), dlerror());
  using GetApi = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApi>(dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr)
    fail("PJRT plugin {}: does not export GetPjrtApi (not a PJRT plugin)", path.string());
  const PJRT_Api* api = get_api();
  if (api == nullptr) fail("PJRT plugin {}: GetPjrtApi returned no API table", path.string());
  std::shared_ptr<Plugin> plugin(new Plugin());
  plugin->path_ = path;
  plugin->api_ = api;
  const std::size_t version_end = offsetof(PJRT_Api, pjrt_api_version) + sizeof(PJRT_Api_Version);
  if (api->struct_size < version_end)
    fail("PJRT plugin {}: its API table is {} bytes, too small to hold a version", path.string(),
         api->struct_size);
  plugin->major_ = api->pjrt_api_version.major_version;
  plugin->minor_ = api->pjrt_api_version.minor_version;
  if (plugin->major_ != PJRT_API_MAJOR || plugin->minor_ < kMinApiMinor) {
    fail(
        "PJRT plugin {}: PJRT C API version {}.{} cannot be used; mcinfer needs {}.{} or a later "
        "{}.x (written against {}.{})",
        path.string(), plugin->major_, plugin->minor_, PJRT_API_MAJOR, kMinApiMinor, PJRT_API_MAJOR,
        PJRT_API_MAJOR, PJRT_API_MINOR);
  }
  for (const UsedFunction& fn : kUsed) {
    const bool inside = fn.offset + sizeof(void*) <= api->struct_size;
    void* pointer = nullptr;
    if (inside)
      std::memcpy(&pointer, reinterpret_cast<const char*>(api) + fn.offset, sizeof(void*));
    if (pointer == nullptr) {
      fail("PJRT plugin {} (API {}.{}): does not provide {}, which mcinfer calls", path.string(),
           plugin->major_, plugin->minor_, fn.name);
    }
  }
  auto init = make_args<PJRT_Plugin_Initialize_Args>(PJRT_Plugin_Initialize_Args_STRUCT_SIZE);
  plugin->check(api->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");
  return plugin;
}

void Plugin::check(PJRT_Error* error, std::string_view what) const {
  if (error == nullptr) return;
  auto message = make_args<PJRT_Error_Message_Args>(PJRT_Error_Message_Args_STRUCT_SIZE);
  message.error = error;
  api_->PJRT_Error_Message(&message);
  std::string text(view(message.message, message.message_size));
  auto code = make_args<PJRT_Error_GetCode_Args>(PJRT_Error_GetCode_Args_STRUCT_SIZE);
  code.error = error;
  const bool has_code = api_->PJRT_Error_GetCode(&code) == nullptr;
  auto destroy = make_args<PJRT_Error_Destroy_Args>(PJRT_Error_Destroy_Args_STRUCT_SIZE);
  destroy.error = error;
  api_->PJRT_Error_Destroy(&destroy);
  if (text.size() > 4000) text = text.substr(0, 4000) + " [...]";
  if (has_code && code.code == PJRT_Error_Code_RESOURCE_EXHAUSTED) {
    fail(
        "PJRT plugin {}: {}: out of device memory: {} (use a smaller --batch-tokens, or fewer "
        "--replicas)",
        path_.string(), what, text);
  }
  fail("PJRT plugin {}: {}: {} (code {})", path_.string(), what, text,
       has_code ? static_cast<int>(code.code) : -1);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    this->~DeviceBuffer();
    plugin_ = std::move(other.plugin_);
    buffer_ = std::exchange(other.buffer_, nullptr);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (buffer_ == nullptr) return;
  auto args = make_args<PJRT_Buffer_Destroy_Args>(PJRT_Buffer_Destroy_Args_STRUCT_SIZE);
  args.buffer = buffer_;
  PJRT_Error* error = plugin_->api()->PJRT_Buffer_Destroy(&args);
  buffer_ = nullptr;
  try {
    plugin_->check(error, "PJRT_Buffer_Destroy");
  } catch (const Error&) {
    // A destructor cannot report; the buffer is lost either way.
  }
}

void DeviceBuffer::to_host(void* out, std::size_t bytes) const {
  const PJRT_Api* api = plugin_->api();
  auto size = make_args<PJRT_Buffer_ToHostBuffer_Args>(PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE);
  size.src = buffer_;
  plugin_->check(api->PJRT_Buffer_ToHostBuffer(&size), "PJRT_Buffer_ToHostBuffer (size)");
  if (size.dst_size != bytes) {
    fail("PJRT plugin {}: an output holds {} bytes where {} were expected",
         plugin_->path().string(), size.dst_size, bytes);
  }
  auto copy = make_args<PJRT_Buffer_ToHostBuffer_Args>(PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE);
  copy.src = buffer_;
  copy.dst = out;
  copy.dst_size = bytes;
  plugin_->check(api->PJRT_Buffer_ToHostBuffer(&copy), "PJRT_Buffer_ToHostBuffer");
  await_event(*plugin_, copy.event, "PJRT_Buffer_ToHostBuffer (wait)");
}

Client::Client(std::shared_ptr<const Plugin> plugin, int cpu_devices) : plugin_(std::move(plugin)) {
  const PJRT_Api* api = plugin_->api();
  std::vector<PJRT_NamedValue> options;
  static constexpr char kCpuDeviceCount[] = "cpu_device_count";
  if (cpu_devices > 0) {
    PJRT_NamedValue count;
    std::memset(&count, 0, sizeof(count));
    count.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    count.name = kCpuDeviceCount;
    count.name_size = sizeof(kCpuDeviceCount) - 1;
    count.type = PJRT_NamedValue_kInt64;
    count.int64_value = cpu_devices;
    count.value_size = 1;
    options.push_back(count);
  }
  auto create = make_args<PJRT_Client_Create_Args>(PJRT_Client_Create_Args_STRUCT_SIZE);
  create.create_options = options.data();
  create.num_options = options.size();
  plugin_->check(api->PJRT_Client_Create(&create), "PJRT_Client_Create");
  client_ = create.client;

  auto name = make_args<PJRT_Client_PlatformName_Args>(PJRT_Client_PlatformName_Args_STRUCT_SIZE);
  name.client = client_;
  plugin_->check(api->PJRT_Client_PlatformName(&name), "PJRT_Client_PlatformName");
  platform_ = view(name.platform_name, name.platform_name_size);
  auto version =
      make_args<PJRT_Client_PlatformVersion_Args>(PJRT_Client_PlatformVersion_Args_STRUCT_SIZE);
  version.client = client_;
  plugin_->check(api->PJRT_Client_PlatformVersion(&version), "PJRT_Client_PlatformVersion");
  platform_version_ = view(version.platform_version, version.platform_version_size);

  auto list = make_args<PJRT_Client_AddressableDevices_Args>(
      PJRT_Client_AddressableDevices_Args_STRUCT_SIZE);
  list.client = client_;
  plugin_->check(api->PJRT_Client_AddressableDevices(&list), "PJRT_Client_AddressableDevices");
  for (std::size_t i = 0; i < list.num_addressable_devices; ++i) {
    DeviceInfo info;
    info.device = list.addressable_devices[i];
    auto desc =
        make_args<PJRT_Device_GetDescription_Args>(PJRT_Device_GetDescription_Args_STRUCT_SIZE);
    desc.device = info.device;
    plugin_->check(api->PJRT_Device_GetDescription(&desc), "PJRT_Device_GetDescription");
    auto id = make_args<PJRT_DeviceDescription_Id_Args>(PJRT_DeviceDescription_Id_Args_STRUCT_SIZE);
    id.device_description = desc.device_description;
    plugin_->check(api->PJRT_DeviceDescription_Id(&id), "PJRT_DeviceDescription_Id");
    info.id = id.id;
    auto kind =
        make_args<PJRT_DeviceDescription_Kind_Args>(PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE);
    kind.device_description = desc.device_description;
    plugin_->check(api->PJRT_DeviceDescription_Kind(&kind), "PJRT_DeviceDescription_Kind");
    info.kind = view(kind.device_kind, kind.device_kind_size);
    auto text = make_args<PJRT_DeviceDescription_ToString_Args>(
        PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE);
    text.device_description = desc.device_description;
    plugin_->check(api->PJRT_DeviceDescription_ToString(&text), "PJRT_DeviceDescription_ToString");
    info.description = view(text.to_string, text.to_string_size);
    devices_.push_back(std::move(info));
  }
  if (devices_.empty())
    fail("PJRT plugin {}: the client has no addressable device", plugin_->path().string());
  for (std::size_t i = 0; i < devices_.size(); ++i) devices_[i] = memory_of(i);
}

Client::~Client() {
  auto args = make_args<PJRT_Client_Destroy_Args>(PJRT_Client_Destroy_Args_STRUCT_SIZE);
  args.client = client_;
  plugin_->api()->PJRT_Client_Destroy(&args);  // an error here has no one to tell
}

DeviceInfo Client::memory_of(std::size_t index) const {
  DeviceInfo info = devices_.at(index);
  auto stats = make_args<PJRT_Device_MemoryStats_Args>(PJRT_Device_MemoryStats_Args_STRUCT_SIZE);
  stats.device = info.device;
  PJRT_Error* error = plugin_->api()->PJRT_Device_MemoryStats(&stats);
  if (error != nullptr) {
    // CPU plugins keep no statistics (UNIMPLEMENTED): no limit to check against.
    try {
      plugin_->check(error, "PJRT_Device_MemoryStats");
    } catch (const Error&) {
    }
    return info;
  }
  info.memory_in_use = stats.bytes_in_use;
  if (stats.bytes_limit_is_set) info.memory_limit = stats.bytes_limit;
  return info;
}

std::shared_ptr<const Executable> Client::compile(const std::string& stablehlo) const {
  const PJRT_Api* api = plugin_->api();
  static constexpr char kFormat[] = "mlir";
  auto program = make_args<PJRT_Program>(PJRT_Program_STRUCT_SIZE);
  std::string code = stablehlo;  // the API takes a mutable pointer
  program.code = code.data();
  program.code_size = code.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  auto args = make_args<PJRT_Client_Compile_Args>(PJRT_Client_Compile_Args_STRUCT_SIZE);
  args.client = client_;
  args.program = &program;
  args.compile_options = reinterpret_cast<const char*>(kCompileOptions);
  args.compile_options_size = sizeof(kCompileOptions);
  plugin_->check(api->PJRT_Client_Compile(&args), "compiling the model (PJRT_Client_Compile)");
  auto get = make_args<PJRT_LoadedExecutable_GetExecutable_Args>(
      PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE);
  get.loaded_executable = args.executable;
  // Owned from here, so that an error below destroys it.
  auto result = std::make_shared<Executable>(plugin_, args.executable, 0);
  plugin_->check(api->PJRT_LoadedExecutable_GetExecutable(&get),
                 "PJRT_LoadedExecutable_GetExecutable");
  auto outputs =
      make_args<PJRT_Executable_NumOutputs_Args>(PJRT_Executable_NumOutputs_Args_STRUCT_SIZE);
  outputs.executable = get.executable;
  PJRT_Error* error = api->PJRT_Executable_NumOutputs(&outputs);
  auto destroy = make_args<PJRT_Executable_Destroy_Args>(PJRT_Executable_Destroy_Args_STRUCT_SIZE);
  destroy.executable = get.executable;
  api->PJRT_Executable_Destroy(&destroy);
  plugin_->check(error, "PJRT_Executable_NumOutputs");
  result->outputs_ = outputs.num_outputs;
  return result;
}

DeviceBuffer Client::upload(const void* host, ElementType type, std::span<const std::int64_t> dims,
                            std::size_t index) const {
  auto args = make_args<PJRT_Client_BufferFromHostBuffer_Args>(
      PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE);
  args.client = client_;
  args.data = host;
  args.type = buffer_type(type);
  args.dims = dims.data();
  args.num_dims = dims.size();
  // The plugin copies (or finishes with) the host array before the done event; we wait for it,
  // so the caller may reuse `host` on return.
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
  args.device = devices_.at(index).device;
  plugin_->check(plugin_->api()->PJRT_Client_BufferFromHostBuffer(&args),
                 "copying to the device (PJRT_Client_BufferFromHostBuffer)");
  DeviceBuffer buffer(plugin_, args.buffer);
  await_event(*plugin_, args.done_with_host_buffer, "copying to the device (wait)");
  return buffer;
}

Executable::~Executable() {
  if (executable_ == nullptr) return;
  auto args =
      make_args<PJRT_LoadedExecutable_Destroy_Args>(PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE);
  args.executable = executable_;
  plugin_->api()->PJRT_LoadedExecutable_Destroy(&args);
}

std::vector<DeviceBuffer> Executable::execute(PJRT_Device* device,
                                              std::span<PJRT_Buffer* const> args) const {
  auto options = make_args<PJRT_ExecuteOptions>(PJRT_ExecuteOptions_STRUCT_SIZE);
  std::vector<PJRT_Buffer*> outputs(outputs_, nullptr);
  PJRT_Buffer* const* argument_list = args.data();
  PJRT_Buffer** output_list = outputs.data();
  PJRT_Event* done = nullptr;
  auto run =
      make_args<PJRT_LoadedExecutable_Execute_Args>(PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE);
  run.executable = executable_;
  run.options = &options;
  run.argument_lists = &argument_list;
  run.num_devices = 1;
  run.num_args = args.size();
  run.output_lists = &output_list;
  run.device_complete_events = &done;
  run.execute_device = device;
  plugin_->check(plugin_->api()->PJRT_LoadedExecutable_Execute(&run),
                 "running the model (PJRT_LoadedExecutable_Execute)");
  std::vector<DeviceBuffer> result;
  for (PJRT_Buffer* b : outputs) result.emplace_back(plugin_, b);
  await_event(*plugin_, done, "running the model (wait)");
  return result;
}

}  // namespace mcinfer::pjrt
