// A library that needs a function train does not have: dlopen (RTLD_NOW)
// fails and names the symbol.
namespace pipeline {
int FunctionTrainDoesNotHave();
}  // namespace pipeline

extern "C" int calls_missing() { return pipeline::FunctionTrainDoesNotHave(); }
