/** Version of the ctxfold core (from Cargo.toml). */
export function version(): string;
