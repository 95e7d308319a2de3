#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// C library functions Swift's Glibc module does not export (they are declared only with
/// `_GNU_SOURCE`, or in headers it leaves out), looked up by name in the process.
package enum CFunctions {
    /// The function named `name`, as `type` (a `@convention(c)` function type), or `nil` when the
    /// C library has none.
    package static func lookUp<Function>(_ name: String, as type: Function.Type) -> Function? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}
