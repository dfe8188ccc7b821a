/* test_nvargs.c: nvcc's command line as the launcher and keys read it:
 * the mode, input, output and depfile of real build systems' commands,
 * what is never cached and why, the GPU code asked for, and which
 * commands name a path relative to the working directory (only those key
 * it: a wrong "no" is a stale hit in another directory). */
#include "nvargs.h"

#include <criterion/criterion.h>
#include <string.h>

#define ARGS(...) ((char *[]){__VA_ARGS__})
#define N(...) (sizeof((char *[]){__VA_ARGS__}) / sizeof(char *))
#define PARSE(a, ...) cbc_nv_parse(ARGS(__VA_ARGS__), N(__VA_ARGS__), (a))
#define RELATIVE(...) cbc_nv_names_relative(ARGS(__VA_ARGS__), N(__VA_ARGS__), NULL, NULL)

Test(nvargs, cmake_object_command)
{
    struct cbc_nv_args a;
    PARSE(&a, "-forward-unknown-to-host-compiler", "-I/w/inc", "-O3", "-DNDEBUG",
          "--generate-code=arch=compute_90,code=[compute_90,sm_90]", "-MD", "-MT",
          "CMakeFiles/k.dir/k.cu.o", "-MF", "CMakeFiles/k.dir/k.cu.o.d", "-x", "cu", "-c",
          "/w/k.cu", "-o", "CMakeFiles/k.dir/k.cu.o");
    cr_assert_str_empty(a.why, "%s", a.why);
    cr_assert_eq(a.mode, CBC_NV_OBJECT);
    cr_assert_eq(a.n_inputs, 1);
    cr_assert_str_eq(a.argv[a.input_idx[0]], "/w/k.cu");
    cr_assert_str_eq(a.output, "CMakeFiles/k.dir/k.cu.o");
    cr_assert(a.md);
    cr_assert_str_eq(a.depfile, "CMakeFiles/k.dir/k.cu.o.d");
    cr_assert_str_eq(a.mt, "CMakeFiles/k.dir/k.cu.o");
    cr_assert_eq(a.n_codes, 2, "sm_90 and compute_90");
    for (size_t i = 0; i < a.argc; i++) { /* -MT, -MF, -o and their values are not keyed */
        bool out = cbc_nv_is_output_arg(&a, i);
        bool want = i >= 6 && i <= 9 ? true : i >= 14;
        cr_assert_eq(out, want, "argument %zu '%s'", i, a.argv[i]);
    }
    cbc_nv_release(&a);
}

Test(nvargs, never_cached_and_said_why)
{
    struct cbc_nv_args a;
    PARSE(&a, "-E", "k.cu");
    cr_assert(strstr(a.why, "--preprocess"), "%s", a.why);
    cbc_nv_release(&a);
    PARSE(&a, "-c", "-", "-o", "k.o");
    cr_assert(strstr(a.why, "standard input"), "%s", a.why);
    cbc_nv_release(&a);
    PARSE(&a, "-c", "k.cu", "-o=k.o");
    cr_assert(strstr(a.why, "separate argument"), "%s", a.why);
    cbc_nv_release(&a);
    PARSE(&a, "-c", "-cubin", "k.cu");
    cr_assert(strstr(a.why, "more than one"), "%s", a.why);
    cbc_nv_release(&a);
    PARSE(&a, "-c", "k.cu", "-I");
    cr_assert(strstr(a.why, "has no value"), "%s", a.why);
    cbc_nv_release(&a);
}

Test(nvargs, native_is_flagged)
{
    struct cbc_nv_args a;
    PARSE(&a, "-cubin", "-arch=native", "k.cu", "-o", "k.cubin");
    cr_assert(a.native);
    cbc_nv_release(&a);
}

Test(nvargs, absolute_commands_name_no_relative_path)
{
    cr_assert_not(RELATIVE("-I/w/inc", "-isystem", "/w/sys", "-O3", "-DX=a/b", "-x", "cu",
                           "-arch=sm_90", "-Xcompiler", "-fPIC,-Wall,-I/w/h", "-c", "/w/k.cu",
                           "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
                           "-Xptxas", "-O3", "-std=c++17", "-ccbin", "/usr/bin/g++"));
    cr_assert_not(RELATIVE("-Xcompiler", "-isystem", "-Xcompiler", "/w/sys", "/w/k.cu"),
                  "a host option's separate value through a second -Xcompiler");
}

Test(nvargs, every_relative_spelling_is_seen)
{
    cr_assert(RELATIVE("-c", "k.cu"), "an input");
    cr_assert(RELATIVE("-I", "inc", "/w/k.cu"), "-I's separate value");
    cr_assert(RELATIVE("-Iinc", "/w/k.cu"), "-I's attached value");
    cr_assert(RELATIVE("--include-path=inc", "/w/k.cu"), "the long form");
    cr_assert(RELATIVE("-isystem", "sys", "/w/k.cu"));
    cr_assert(RELATIVE("-include", "pre.h", "/w/k.cu"));
    cr_assert(RELATIVE("-ccbin", "bin/g++", "/w/k.cu"));
    cr_assert(RELATIVE("-Xcompiler", "-fPIC,-Iinc", "/w/k.cu"), "-Xcompiler's -I");
    cr_assert(RELATIVE("-Xcompiler", "-iquote", "-Xcompiler", "q", "/w/k.cu"),
              "-Xcompiler's -iquote split across two values");
    cr_assert(RELATIVE("-iquoteq", "/w/k.cu"), "a host option forwarded as it is");
    cr_assert(RELATIVE("-iquote", "q", "/w/k.cu"), "its separate value");
    cr_assert(RELATIVE("-I/w/../inc", "/w/k.cu"), "any ./ or ../");
    cr_assert(RELATIVE("-DHDR=./h.h", "/w/k.cu"));
}

static bool skip_first_two(size_t i, void *ctx)
{
    (void)ctx;
    return i < 2;
}

Test(nvargs, skipped_arguments_are_not_judged)
{
    char *argv[] = {"-I", "inc", "/w/k.cu"};
    cr_assert(cbc_nv_names_relative(argv, 3, NULL, NULL), "-I inc");
    cr_assert_not(cbc_nv_names_relative(argv, 3, skip_first_two, NULL),
                  "skipped arguments");
    char *out[] = {"-o", "out/k.o", "/w/k.cu"};
    cr_assert_not(cbc_nv_names_relative(out, 3, NULL, NULL),
                  "where the output goes changes no file the compile reads");
}
