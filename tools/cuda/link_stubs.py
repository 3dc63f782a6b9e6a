#!/usr/bin/env python3
"""Link stubs of a LibTorch that lives on another machine.

A CUDA build for a GPU machine needs that machine's LibTorch (a pip wheel's
torch/, say) only to compile and link; its 1 GB of libraries do not have to
be here. On the GPU machine, save each library's exported symbols:

    readelf --dyn-syms -W libtorch_cpu.so > libtorch_cpu.so.dynsym

and here, beside the wheel's include/ folder, write a stub library per
file: every exported function, object and thread-local of the original,
under its soname, with no code behind them.

    tools/cuda/link_stubs.py --out=DIR/lib SYMS/*.so.dynsym

Binaries linked against DIR load the real libraries by soname there
(LD_LIBRARY_PATH or the wheel's own folders); object sizes are the real
ones, so copy relocations are right. Stubs are never for running.
"""
import argparse
import os
import subprocess
import sys
import tempfile


def assembler(dynsym_path):
    """The assembler text defining every symbol a `readelf --dyn-syms -W` lists."""
    lines, seen = [], set()
    for row in open(dynsym_path):
        f = row.split()
        if len(f) < 8 or not f[0].endswith(':') or f[6] in ('UND', 'Ndx'):
            continue
        size, kind, bind = int(f[2], 0), f[3], f[4]
        name = f[7].split('@')[0]
        if not name or name in seen or kind not in ('FUNC', 'IFUNC', 'OBJECT', 'TLS'):
            continue
        seen.add(name)
        q = '"%s"' % name
        scope = '.weak' if bind == 'WEAK' else '.globl'
        if kind in ('FUNC', 'IFUNC'):
            lines += ['.text', '%s %s' % (scope, q), '.type %s,@function' % q, '%s: ret' % q]
            continue
        section = '.section .tbss,"awT",@nobits' if kind == 'TLS' else '.data'
        symbol_type = '@gnu_unique_object' if bind == 'UNIQUE' else '@object'
        if bind == 'UNIQUE':
            scope = '.globl'
        lines += [section, '%s %s' % (scope, q), '.type %s,%s' % (q, symbol_type),
                  '.size %s,%d' % (q, size), '%s: .zero %d' % (q, max(size, 1))]
    return '\n'.join(lines) + '\n', len(seen)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', required=True, help='folder for the stub libraries')
    parser.add_argument('dynsym', nargs='+', help='NAME.so.dynsym files from readelf --dyn-syms -W')
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for path in args.dynsym:
        soname = os.path.basename(path)[:-len('.dynsym')]
        text, count = assembler(path)
        with tempfile.NamedTemporaryFile('w', suffix='.s') as source:
            source.write(text)
            source.flush()
            target = os.path.join(args.out, soname)
            subprocess.run(['gcc', '-shared', '-nostdlib', '-Wl,-soname,' + soname, '-o', target,
                            source.name], check=True)
        print('%s: %d symbols' % (target, count))


if __name__ == '__main__':
    sys.exit(main())
