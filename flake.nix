{
  description = "shiori: visual-novel catalog API and identity provider";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in {
      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = [
            pkgs.nodejs_24
            pkgs.postgresql_17            # psql, and a server for DATABASE_URL / TEST_DATABASE_URL
            pkgs.opentelemetry-collector-contrib  # otelcol-contrib --config otel/collector.yaml
            pkgs.chromium                 # browser tests of the identity pages
          ];
          shellHook = ''
            export PLAYWRIGHT_CHROMIUM_PATH=${pkgs.chromium}/bin/chromium
            echo "shiori dev shell: node $(node --version), $(psql --version)"
          '';
        };
      });
    };
}
