// LeakSanitizer reads its default suppressions from this function when the
// binary defines it (sanitizer builds only: //third_party:torch adds this
// file under --config=asan and --config=fuzz). Only leaks inside the
// uninstrumented system libraries are listed; leaks whose stacks stay in
// our code are still reported.
//
// - LibTorch 1.13's caffe2::serialize::PyTorchStreamReader leaks the zip
//   reader state miniz allocated in mz_zip_reader_init (152 bytes) when its
//   constructor throws on a damaged or foreign archive: the destructor of a
//   half-built object never runs. Every reader of weights files reaches it,
//   through our code and through torch::jit::load. LibTorch is built without
//   frame pointers, so the report's stack ends inside libtorch_cpu.so and
//   the suppression can only name the library.
// - tcmalloc (linked into train and predict) registers its MallocExtension
//   with a `new` it never frees (8 bytes, once per process).
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libtorch_cpu.so\n"
         "leak:libtcmalloc_minimal.so\n";
}
