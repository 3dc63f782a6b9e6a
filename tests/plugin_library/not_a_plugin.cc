// A shared library that is no plugin library: it has no ABI stamp.
extern "C" int not_a_plugin() { return 0; }
