#ifndef PIPELINE_REGISTRY_REGISTRY_H_
#define PIPELINE_REGISTRY_REGISTRY_H_

// One registry mechanism for every plugin kind (models, datasets, samplers,
// transforms, strategies, optimizers, schedules). A plugin registers itself by
// name from its own folder with PIPELINE_REGISTER_PLUGIN; the core creates it
// from a PluginConfig and never names a concrete plugin.
//
// Each kind is an interface with a PluginKind<Interface> specialisation that
// gives its name (for messages) and the Context the factory receives:
//
//   template <> struct PluginKind<Model> {
//     static constexpr const char* kName = "model";
//     using Context = ModelContext;
//   };

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/message.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/util/edit_distance.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {

template <typename Interface>
struct PluginKind;

// What a plugin declares about itself beyond its options, for kinds whose
// PluginKind names a `Traits` struct (a transform: whether it only belongs
// in training; a strategy: how many processes the launcher starts). Kinds
// without one get NoTraits.
struct NoTraits {};
template <typename Interface, typename = void>
struct TraitsOfKind {
  using type = NoTraits;
};
template <typename Interface>
struct TraitsOfKind<Interface, std::void_t<typename PluginKind<Interface>::Traits>> {
  using type = typename PluginKind<Interface>::Traits;
};

// What --list_plugins shows of one plugin.
struct PluginInfo {
  std::string kind;
  std::string name;
  std::string description;
  // The options message with its defaults, as text.
  std::string options_type;
  std::string default_options;
};

// Every kind's registry adds itself here, so tools can list all plugins
// without the core knowing which kinds or plugins are linked in.
class RegistryIndex {
 public:
  using Lister = std::function<std::vector<PluginInfo>()>;
  static RegistryIndex& Global();
  void Add(const std::string& kind, Lister lister);
  std::vector<PluginInfo> ListAll() const;

 private:
  std::map<std::string, Lister> listers_;
};

// For an error about `field`, which the options message `options_type`
// lacks: the other plugins of the same kind whose options have it
// ("strategy \"ddp\""), so the error can say where it belongs.
std::vector<std::string> PluginsWithOptionField(const std::string& options_type,
                                                const std::string& field);

// Unpacks `config.options` into `options` (whose type the plugin declares).
// An empty Any leaves `options` at its defaults.
absl::Status UnpackPluginOptions(const std::string& kind, const std::string& name,
                                 const google::protobuf::Any& config_options,
                                 google::protobuf::Message* options);

std::string DescribeOptions(const google::protobuf::Message& options);

template <typename Interface>
class Registry {
 public:
  using Context = typename PluginKind<Interface>::Context;
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Interface>>(
      const google::protobuf::Message& options, const Context& context)>;
  using Validator = std::function<absl::Status(const google::protobuf::Message& options)>;
  using Traits = typename TraitsOfKind<Interface>::type;

  static Registry& Global() {
    static Registry* registry = [] {
      auto* r = new Registry();
      RegistryIndex::Global().Add(PluginKind<Interface>::kName, [r] { return r->List(); });
      return r;
    }();
    return *registry;
  }

  // Returns an error if `name` is taken.
  absl::Status Register(const std::string& name, const std::string& description,
                        std::unique_ptr<google::protobuf::Message> default_options,
                        Validator validator, Factory factory) {
    if (entries_.count(name)) {
      return absl::AlreadyExistsError(absl::StrCat(PluginKind<Interface>::kName, " \"", name,
                                                   "\" is registered twice"));
    }
    entries_[name] = Entry{description, std::move(default_options), std::move(validator),
                           std::move(factory)};
    return absl::OkStatus();
  }

  // The traits plugin `name` declared (PIPELINE_PLUGIN_TRAITS); defaults
  // for one that declared none. Returns an error if `name` is not registered.
  absl::Status SetTraits(const std::string& name, Traits traits) {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      return absl::NotFoundError(absl::StrCat("traits for ", PluginKind<Interface>::kName, " \"",
                                              name, "\", which is not registered"));
    }
    it->second.traits = std::move(traits);
    return absl::OkStatus();
  }
  const Traits& TraitsOf(const std::string& name) const {
    static const Traits kNone{};
    auto it = entries_.find(name);
    return it == entries_.end() ? kNone : it->second.traits;
  }

  // The plugin a config slot ("train_data.sampler", "loss") gets when the
  // config names none, as its plugin declared (PIPELINE_DEFAULT_PLUGIN).
  // Returns an error if another plugin already claimed the slot.
  absl::Status DeclareDefault(const std::string& slot, const std::string& name) {
    auto [it, inserted] = defaults_.emplace(slot, name);
    if (!inserted && it->second != name) {
      return absl::AlreadyExistsError(absl::StrCat(PluginKind<Interface>::kName, "s \"",
                                                   it->second, "\" and \"", name,
                                                   "\" both declare themselves the default for ",
                                                   slot));
    }
    return absl::OkStatus();
  }
  // "" when no linked plugin declared itself the default for `slot`.
  std::string DefaultFor(const std::string& slot) const {
    auto it = defaults_.find(slot);
    return it == defaults_.end() ? "" : it->second;
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;
  }

  // The options message of plugin `name` with its defaults, or null.
  const google::protobuf::Message* DefaultOptions(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : it->second.default_options.get();
  }

  // Unpacks and validates the options of `config` without creating anything.
  // `config` is a PluginConfig, or a slot's own message with the same
  // `name` and `options` fields (ModelConfig).
  template <typename Config = PluginConfig>
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ResolveOptions(
      const Config& config) const {
    const std::string kind = PluginKind<Interface>::kName;
    if (config.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("name: no ", kind, " named; choose one of: ",
                                                     absl::StrJoin(Names(), ", ")));
    }
    auto it = entries_.find(config.name());
    if (it == entries_.end()) {
      return absl::NotFoundError(absl::StrCat(
          "name: \"", config.name(), "\" is not a registered ", kind,
          "; registered: ", Names().empty() ? "(none)" : absl::StrJoin(Names(), ", "), ".",
          DidYouMean(config.name(), Names())));
    }
    std::unique_ptr<google::protobuf::Message> options(it->second.default_options->New());
    if (auto status = UnpackPluginOptions(kind, config.name(), config.options(), options.get());
        !status.ok()) {
      return status;
    }
    if (it->second.validator) {
      if (auto status = it->second.validator(*options); !status.ok()) {
        return absl::Status(status.code(), absl::StrCat("options: ", status.message()));
      }
    }
    return options;
  }

  template <typename Config = PluginConfig>
  absl::Status Validate(const Config& config) const {
    return ResolveOptions(config).status();
  }

  template <typename Config = PluginConfig>
  absl::StatusOr<std::unique_ptr<Interface>> Create(const Config& config,
                                                    const Context& context) const {
    auto options = ResolveOptions(config);
    if (!options.ok()) return options.status();
    auto created = entries_.at(config.name()).factory(**options, context);
    if (!created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat(PluginKind<Interface>::kName, " \"", config.name(),
                                       "\": ", created.status().message()));
    }
    return created;
  }

  std::vector<PluginInfo> List() const {
    std::vector<PluginInfo> infos;
    for (const auto& [name, entry] : entries_) {
      infos.push_back({PluginKind<Interface>::kName, name, entry.description,
                       entry.default_options->GetDescriptor()->full_name(),
                       DescribeOptions(*entry.default_options)});
    }
    return infos;
  }

 private:
  struct Entry {
    std::string description;
    std::unique_ptr<google::protobuf::Message> default_options;
    Validator validator;
    Factory factory;
    Traits traits{};
  };
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> defaults_;
};

// Registration glue for one plugin with options message `Options`:
//
//   PIPELINE_REGISTER_PLUGIN(Model, "resnet", ResNetOptions,
//                            "ResNet-18/34/50 with torchvision's parameter names",
//                            CreateResNet, ValidateResNetOptions);
//
// `factory` is absl::StatusOr<std::unique_ptr<Interface>>(const Options&,
// const Context&); the optional `validator` is absl::Status(const Options&),
// run while the whole config is checked, before anything is built.
template <typename Interface, typename Options>
class PluginRegistration {
 public:
  using Context = typename PluginKind<Interface>::Context;
  using TypedFactory =
      std::function<absl::StatusOr<std::unique_ptr<Interface>>(const Options&, const Context&)>;
  using TypedValidator = std::function<absl::Status(const Options&)>;

  PluginRegistration(const std::string& name, const std::string& description,
                     TypedFactory factory, TypedValidator validator = nullptr);
};

// Registration happens during static initialisation, where there is nobody to
// return an error to. For the plugins linked into a binary, `registration`
// runs at once and a name registered twice aborts start-up with a message.
// While a plugin library is being loaded (plugin_library.h), registrations
// are held instead: the loader runs them only after the library's ABI stamp
// has been checked, and reports a taken name as an error naming the library.
void SubmitRegistration(std::function<absl::Status()> registration);

// For the plugin library loader: from Begin to End, SubmitRegistration keeps
// the registrations instead of running them, and End hands them over.
void BeginHoldingRegistrations();
std::vector<std::function<absl::Status()>> EndHoldingRegistrations();

template <typename Interface, typename Options>
PluginRegistration<Interface, Options>::PluginRegistration(const std::string& name,
                                                           const std::string& description,
                                                           TypedFactory factory,
                                                           TypedValidator validator) {
  typename Registry<Interface>::Validator erased_validator;
  if (validator) {
    erased_validator = [validator](const google::protobuf::Message& options) {
      return validator(static_cast<const Options&>(options));
    };
  }
  SubmitRegistration([name, description, erased_validator, factory] {
    return Registry<Interface>::Global().Register(
        name, description, std::make_unique<Options>(), erased_validator,
        [factory](const google::protobuf::Message& options, const Context& context) {
          return factory(static_cast<const Options&>(options), context);
        });
  });
}

#define PIPELINE_REGISTER_PLUGIN(Interface, name, Options, description, ...)        \
  static const ::pipeline::PluginRegistration<Interface, Options> PIPELINE_CONCAT_( \
      pipeline_plugin_registration_, __COUNTER__)(name, description, __VA_ARGS__)

// Declares, beside a plugin's registration, the traits of its kind:
//
//   PIPELINE_PLUGIN_TRAITS(Transform, "random_horizontal_flip",
//                          TransformTraits{.training_only = true});
#define PIPELINE_PLUGIN_TRAITS(Interface, name, ...)                                     \
  static const bool PIPELINE_CONCAT_(pipeline_plugin_traits_, __COUNTER__) = [] {        \
    ::pipeline::SubmitRegistration(                                                      \
        [] { return ::pipeline::Registry<Interface>::Global().SetTraits(name, __VA_ARGS__); }); \
    return true;                                                                         \
  }()

// Declares plugin `name` the one a config slot gets when it names none:
//
//   PIPELINE_DEFAULT_PLUGIN(Sampler, "train_data.sampler", "random");
#define PIPELINE_DEFAULT_PLUGIN(Interface, slot, name)                                   \
  static const bool PIPELINE_CONCAT_(pipeline_default_plugin_, __COUNTER__) = [] {       \
    ::pipeline::SubmitRegistration(                                                      \
        [] { return ::pipeline::Registry<Interface>::Global().DeclareDefault(slot, name); }); \
    return true;                                                                         \
  }()

}  // namespace pipeline

#endif  // PIPELINE_REGISTRY_REGISTRY_H_
