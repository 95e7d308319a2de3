/// Runs a store call and turns what it throws into a ``SwoopError`` with code
/// ``SwoopError/Code/store`` (a ``SwoopError`` passes through as it is).
func withStoreErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as SwoopError {
        throw error
    } catch {
        throw SwoopError(.store, "cannot update the download state: \(error)", cause: error)
    }
}
