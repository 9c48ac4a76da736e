//! The one list of the project's kernels: every `#[kernel]` of this crate,
//! grouped by the source file that defines it, in a stable order. The demo
//! lists their PTX from it; the workspace tests snapshot, assemble,
//! recompile and mutate every variant in it, and read its files for the
//! kernels' and device functions' sources. A new kernel is added here.

use crate::{decode, encode, gemm, gemv, quantize, samples};
use nvfp4_dsl::Variant;
use std::path::PathBuf;

/// A source file of this crate that defines kernels, or `#[device]` items
/// that kernels of another file call (`kernels` empty).
#[derive(Debug)]
pub struct Source {
    /// The file's path from this crate's root.
    pub path: &'static str,
    /// The `VARIANTS` of each kernel the file defines.
    pub kernels: &'static [&'static [Variant]],
}

impl Source {
    /// The file where this crate was built.
    pub fn file(&self) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(self.path)
    }
}

/// Every source file of kernels with its kernels (and the files of device
/// items that kernels of another file call), in the order of
/// [`all_variants`].
pub static SOURCES: &[Source] = &[
    Source {
        path: "src/samples.rs",
        kernels: &[
            samples::saxpy::VARIANTS,
            samples::block_sum::VARIANTS,
            samples::tile_mirror::VARIANTS,
            samples::mixed_ops::VARIANTS,
            samples::transpose::VARIANTS,
        ],
    },
    Source {
        path: "src/decode.rs",
        kernels: &[decode::decode_all::VARIANTS],
    },
    Source {
        path: "src/encode.rs",
        kernels: &[encode::encode_all::VARIANTS],
    },
    Source {
        path: "src/gemv.rs",
        kernels: &[gemv::gemv_nvfp4::VARIANTS],
    },
    Source {
        path: "src/gemm/sm100.rs",
        kernels: &[gemm::gemm_nvfp4::VARIANTS],
    },
    Source {
        path: "src/gemm/sm90/mod.rs",
        kernels: &[gemm::gemm_nvfp4_sm90::VARIANTS],
    },
    Source {
        path: "src/gemm/sm90/decode_a.rs",
        kernels: &[gemm::gemm_sm90_decode_a::VARIANTS],
    },
    Source {
        path: "src/gemm/sm90/mainloop.rs",
        kernels: &[],
    },
    Source {
        path: "src/gemm/sm90/epilogue.rs",
        kernels: &[gemm::gemm_sm90_reduce::VARIANTS],
    },
    Source {
        path: "src/gemm/sm90/stream.rs",
        kernels: &[gemm::gemm_nvfp4_sm90_stream::VARIANTS],
    },
    Source {
        path: "src/gemm/prearrange.rs",
        kernels: &[
            gemm::prearrange_weights_sm90::VARIANTS,
            gemm::decode_prearranged::VARIANTS,
        ],
    },
    Source {
        path: "src/quantize.rs",
        kernels: &[
            quantize::quantize_nvfp4::VARIANTS,
            quantize::quantize_image_sm90::VARIANTS,
        ],
    },
];

/// Every variant (kernel x specialisation) of every kernel, in the order of
/// [`SOURCES`].
pub fn all_variants() -> Vec<&'static Variant> {
    SOURCES
        .iter()
        .flat_map(|s| s.kernels.iter().copied().flatten())
        .collect()
}
