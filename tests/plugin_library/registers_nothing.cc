// A plugin library with the stamp but without a PIPELINE_REGISTER_PLUGIN.
extern "C" int registers_nothing() { return 0; }
