#ifndef PIPELINE_CONFIG_MOVED_MODEL_OPTIONS_H_
#define PIPELINE_CONFIG_MOVED_MODEL_OPTIONS_H_

// The fields every model takes (num_classes, in_channels, weights,
// freeze_backbone) are declared once in ModelConfig beside the model's
// name; each model plugin's options used to repeat them. Their options
// types keep the names `reserved`, and the textproto parser drops a
// reserved field without a word: a config still setting one inside
// model.options would lose it silently (a run from random weights instead
// of the file it names). These refuse them instead, naming the new place.

#include <string>
#include <vector>

namespace pipeline {

// Whether `field` is one of the fields that moved out of model.options.
bool IsMovedModelOption(const std::string& field);

// "model.options.<field> has moved: write model { <field>: <value> } ...".
std::string MovedModelOptionError(const std::string& field, const std::string& value);

// Every moved field set directly inside model.options in the textproto
// `text` (named `name` in the errors), as "<name>:<line>:<col>: " +
// MovedModelOptionError.
std::vector<std::string> FindMovedModelOptions(const std::string& text, const std::string& name);

}  // namespace pipeline

#endif  // PIPELINE_CONFIG_MOVED_MODEL_OPTIONS_H_
