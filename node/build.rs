//! Links the addon against Node's N-API symbols, which the `node` process
//! provides when it loads the addon.

fn main() {
    napi_build::setup();
}
