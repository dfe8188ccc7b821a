//! main.rs: runs saxpy on GPU 0 from the cubins this program carries. The
//! loader (libcubincache, through a few `extern "C"` declarations) picks
//! the image for the GPU and verifies it before the driver sees it; the
//! driver's entry points come from `cbc_driver_symbol`, so the program links
//! neither libcuda nor the CUDA runtime. Without a GPU, or without an image
//! for it, it prints the loader's explanation and its fix.
//! Exit: 0 results correct, 1 wrong results or a driver failure, 4 no GPU,
//! no driver or no image for this GPU.
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::process::exit;
use std::ptr::{null, null_mut};

/// struct cbc_err of <cubincache/status.h>
#[repr(C)]
struct CbcErr {
    status: c_int,
    msg: [c_char; 1024],
    remedy: [c_char; 512],
}

/// struct cbc_embedded_bundle: only its address is used here
#[repr(C)]
struct EmbeddedBundle {
    _opaque: [u8; 0],
}

const CBC_OK: c_int = 0;
const CBC_E_NO_IMAGE: c_int = 10;
const CBC_E_NO_DRIVER: c_int = 11;
const CBC_E_NO_DEVICE: c_int = 12;

extern "C" {
    static cbc_bundle_saxpy: EmbeddedBundle;
    fn cbc_bundle_open_default(eb: *const EmbeddedBundle, out: *mut *mut c_void, err: *mut CbcErr) -> c_int;
    fn cbc_bundle_origin(b: *const c_void) -> *const c_char;
    fn cbc_bundle_close(b: *mut c_void);
    fn cbc_module_load(b: *mut c_void, device: c_int, opts: *const c_void, out: *mut *mut c_void, err: *mut CbcErr) -> c_int;
    fn cbc_module_function(m: *mut c_void, kernel: *const c_char, f: *mut *mut c_void, err: *mut CbcErr) -> c_int;
    fn cbc_module_target(m: *const c_void) -> *const c_char;
    fn cbc_module_unload(m: *mut c_void);
    fn cbc_driver_symbol(name: *const c_char, abi: c_int, f: *mut *mut c_void, err: *mut CbcErr) -> c_int;
}

type MemAlloc = unsafe extern "C" fn(*mut u64, usize) -> c_int; // cuMemAlloc_v2 (3020)
type MemFree = unsafe extern "C" fn(u64) -> c_int; // cuMemFree_v2 (3020)
type HtoD = unsafe extern "C" fn(u64, *const c_void, usize) -> c_int; // cuMemcpyHtoD_v2 (3020)
type DtoH = unsafe extern "C" fn(*mut c_void, u64, usize) -> c_int; // cuMemcpyDtoH_v2 (3020)
type Launch = unsafe extern "C" fn(
    *mut c_void, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, *mut c_void,
    *mut *mut c_void, *mut *mut c_void,
) -> c_int; // cuLaunchKernel (4000)

fn text(p: &[c_char]) -> String {
    unsafe { CStr::from_ptr(p.as_ptr()) }.to_string_lossy().into_owned()
}

fn fail(err: &CbcErr) -> ! {
    eprintln!("error: {}", text(&err.msg));
    if err.remedy[0] != 0 {
        eprintln!("  fix: {}", text(&err.remedy));
    }
    let code = match err.status {
        CBC_E_NO_DRIVER | CBC_E_NO_DEVICE | CBC_E_NO_IMAGE => 4,
        _ => 1,
    };
    exit(code)
}

fn symbol<T>(name: &CStr, abi: c_int, err: &mut CbcErr) -> T {
    let mut f: *mut c_void = null_mut();
    if unsafe { cbc_driver_symbol(name.as_ptr(), abi, &mut f, err) } != CBC_OK {
        fail(err);
    }
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    unsafe { std::mem::transmute_copy(&f) }
}

fn check(rc: c_int, what: &str) {
    if rc != 0 {
        eprintln!("saxpy: {} failed (CUresult {})", what, rc);
        exit(1);
    }
}

fn main() {
    let mut err = CbcErr { status: 0, msg: [0; 1024], remedy: [0; 512] };
    let mut bundle: *mut c_void = null_mut();
    let mut module: *mut c_void = null_mut();
    let mut func: *mut c_void = null_mut();
    unsafe {
        if cbc_bundle_open_default(&cbc_bundle_saxpy, &mut bundle, &mut err) != CBC_OK
            || cbc_module_load(bundle, 0, null(), &mut module, &mut err) != CBC_OK
            || cbc_module_function(module, c"saxpy".as_ptr(), &mut func, &mut err) != CBC_OK
        {
            fail(&err);
        }
    }
    let alloc: MemAlloc = symbol(c"cuMemAlloc", 3020, &mut err);
    let free: MemFree = symbol(c"cuMemFree", 3020, &mut err);
    let htod: HtoD = symbol(c"cuMemcpyHtoD", 3020, &mut err);
    let dtoh: DtoH = symbol(c"cuMemcpyDtoH", 3020, &mut err);
    let launch: Launch = symbol(c"cuLaunchKernel", 4000, &mut err);

    const N: usize = 1 << 20;
    let a: f32 = 2.5;
    let x: Vec<f32> = (0..N).map(|i| (i % 1000) as f32).collect();
    let mut y: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    let bytes = N * std::mem::size_of::<f32>();
    let (mut dx, mut dy) = (0u64, 0u64);
    let mut n = N as c_int;
    let mut a_arg = a;
    unsafe {
        check(alloc(&mut dx, bytes), "cuMemAlloc");
        check(alloc(&mut dy, bytes), "cuMemAlloc");
        check(htod(dx, x.as_ptr().cast(), bytes), "cuMemcpyHtoD");
        check(htod(dy, y.as_ptr().cast(), bytes), "cuMemcpyHtoD");
        let mut args: [*mut c_void; 4] = [
            (&mut a_arg as *mut f32).cast(),
            (&mut dx as *mut u64).cast(),
            (&mut dy as *mut u64).cast(),
            (&mut n as *mut c_int).cast(),
        ];
        let blocks = ((N + 255) / 256) as c_uint;
        check(launch(func, blocks, 1, 1, 256, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()), "cuLaunchKernel");
        check(dtoh(y.as_mut_ptr().cast(), dy, bytes), "cuMemcpyDtoH"); // waits for the kernel
        check(free(dx), "cuMemFree");
        check(free(dy), "cuMemFree");
    }
    let wrong = y.iter().zip(&want).filter(|(g, w)| (*g - *w).abs() > 1e-5 * w.abs().max(1.0)).count();
    let target = unsafe { CStr::from_ptr(cbc_module_target(module)) }.to_string_lossy().into_owned();
    let origin = unsafe { CStr::from_ptr(cbc_bundle_origin(bundle)) }.to_string_lossy().into_owned();
    println!("saxpy: ran {} on GPU 0, {} of {} values wrong (bundle: {})", target, wrong, N, origin);
    unsafe {
        cbc_module_unload(module);
        cbc_bundle_close(bundle);
    }
    exit(if wrong == 0 { 0 } else { 1 });
}
