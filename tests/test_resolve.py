"""Import resolution: real fixture trees in tmp_path, one rule per test."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loremap.codemap.resolve import Resolver
from loremap.jsonc import loads_or_none


def tree(root: Path, files: dict[str, str]) -> Resolver:
    """Write `files` under `root` and return a resolver over exactly those paths."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Resolver(root, files)


def test_tsconfig_paths_follow_extends_through_comments_and_trailing_commas(tmp_path):
    r = tree(tmp_path, {
        "tsconfig.base.json": """{
            // shared by every app
            "compilerOptions": {
              "baseUrl": ".",
              /* aliases */ "paths": {"@app/*": ["libs/app/src/*"], "@ui": ["libs/ui/index.ts",],},
            },
        }""",
        "apps/web/tsconfig.json": '{"extends": "../../tsconfig.base", "compilerOptions": {}}',
        "apps/web/main.ts": "",
        "libs/app/src/utils/index.ts": "",
        "libs/ui/index.ts": "",
    })
    assert r.resolve("apps/web/main.ts", "typescript", "@app/utils") == (
        "libs/app/src/utils/index.ts",)
    assert r.resolve("apps/web/main.ts", "typescript", "@ui") == ("libs/ui/index.ts",)


def test_paths_without_base_url_start_at_the_tsconfig_that_declares_them(tmp_path):
    r = tree(tmp_path, {
        "web/tsconfig.json": '{"compilerOptions": {"paths": {"~/*": ["./src/*"]}}}',
        "web/src/a.tsx": "",
        "web/src/lib/db.ts": "",
    })
    assert r.resolve("web/src/a.tsx", "tsx", "~/lib/db") == ("web/src/lib/db.ts",)


def test_base_url_resolves_bare_specifiers_and_leaves_packages_alone(tmp_path):
    r = tree(tmp_path, {
        "jsconfig.json": '{"compilerOptions": {"baseUrl": "src"}}',
        "src/components/Button.jsx": "",
        "src/pages/home.js": "",
    })
    assert r.resolve("src/pages/home.js", "javascript", "components/Button") == (
        "src/components/Button.jsx",)
    assert r.resolve("src/pages/home.js", "javascript", "react") == ()


def test_relative_imports_probe_extensions_index_files_and_esm_js_suffixes(tmp_path):
    r = tree(tmp_path, {
        "src/a.ts": "", "src/b.ts": "", "src/types.d.ts": "", "src/lib/index.tsx": "",
        "src/legacy.mjs": "",
    })
    assert r.resolve("src/a.ts", "typescript", "./b.js") == ("src/b.ts",)
    assert r.resolve("src/a.ts", "typescript", "./types") == ("src/types.d.ts",)
    assert r.resolve("src/a.ts", "typescript", "./lib") == ("src/lib/index.tsx",)
    assert r.resolve("src/a.ts", "typescript", "./legacy.mjs") == ("src/legacy.mjs",)


def test_workspace_packages_resolve_by_name_to_their_entry_or_index(tmp_path):
    r = tree(tmp_path, {
        "package.json": '{"private": true, "workspaces": {"packages": ["packages/*"]}}',
        "packages/ui/package.json": '{"name": "@acme/ui", "main": "dist/index.js",'
                                    ' "types": "src/main.ts"}',
        "packages/ui/src/main.ts": "",
        "packages/ui/src/button.ts": "",
        "packages/util/package.json": '{"name": "util", "exports": {".": {"import": "./lib.js"}}}',
        "packages/util/lib.js": "",
        "packages/core/package.json": '{"name": "core"}',
        "packages/core/index.js": "",
        "apps/web/app.ts": "",
    })
    assert r.resolve("apps/web/app.ts", "typescript", "@acme/ui") == ("packages/ui/src/main.ts",)
    assert r.resolve("apps/web/app.ts", "typescript", "@acme/ui/button") == (
        "packages/ui/src/button.ts",)
    assert r.resolve("apps/web/app.ts", "typescript", "util") == ("packages/util/lib.js",)
    assert r.resolve("apps/web/app.ts", "typescript", "core") == ("packages/core/index.js",)


def test_go_imports_resolve_through_the_module_path_and_nested_modules(tmp_path):
    r = tree(tmp_path, {
        "go.mod": "module github.com/acme/shop\n\ngo 1.22\n",
        "main.go": "",
        "internal/cart/cart.go": "", "internal/cart/total.go": "",
        "internal/cart/cart_test.go": "",
        "tools/go.mod": "module github.com/acme/shop/tools\n",
        "tools/lint/lint.go": "",
    })
    assert r.resolve("main.go", "go", "github.com/acme/shop/internal/cart") == (
        "internal/cart/cart.go", "internal/cart/total.go")
    assert r.resolve("main.go", "go", "github.com/acme/shop/tools/lint") == (
        "tools/lint/lint.go",)
    assert r.resolve("tools/lint/lint.go", "go", "fmt") == ()


def test_python_resolves_src_layouts_and_relative_imports(tmp_path):
    r = tree(tmp_path, {
        "src/shop/__init__.py": "", "src/shop/cart.py": "",
        "src/shop/api/__init__.py": "", "src/shop/api/views.py": "",
        "src/shop/api/forms.py": "",
        "tests/test_cart.py": "",
    })
    assert r.resolve("tests/test_cart.py", "python", "shop.cart") == ("src/shop/cart.py",)
    assert r.resolve("tests/test_cart.py", "python", "shop") == ("src/shop/__init__.py",)
    assert r.resolve("src/shop/api/views.py", "python", ".forms") == ("src/shop/api/forms.py",)
    assert r.resolve("src/shop/api/views.py", "python", "..cart") == ("src/shop/cart.py",)
    assert r.resolve("src/shop/api/views.py", "python", ".") == ("src/shop/api/__init__.py",)
    # `from . import helper` where helper is a name defined in the package's __init__
    assert r.resolve("src/shop/api/views.py", "python", ".helper") == (
        "src/shop/api/__init__.py",)
    assert r.resolve("src/shop/cart.py", "python", "os.path") == ()


def test_python_finds_packages_in_any_folder_and_namespace_packages(tmp_path):
    r = tree(tmp_path, {
        "backend/app/__init__.py": "", "backend/app/models.py": "",
        "ns/plugins/loader.py": "",
        "scripts/run.py": "", "scripts/helpers.py": "",
    })
    assert r.resolve("backend/app/models.py", "python", "app") == ("backend/app/__init__.py",)
    assert r.resolve("scripts/run.py", "python", "ns.plugins.loader") == ("ns/plugins/loader.py",)
    assert r.resolve("scripts/run.py", "python", "helpers") == ("scripts/helpers.py",)


def test_rust_mod_declarations_crate_and_super_paths(tmp_path):
    r = tree(tmp_path, {
        "Cargo.toml": '[package]\nname = "shop"\n',
        "src/lib.rs": "", "src/db.rs": "", "src/db/pool.rs": "",
        "src/api/mod.rs": "", "src/api/routes.rs": "",
    })
    assert r.resolve("src/lib.rs", "rust", "mod db") == ("src/db.rs",)
    assert r.resolve("src/lib.rs", "rust", "mod api") == ("src/api/mod.rs",)
    assert r.resolve("src/db.rs", "rust", "mod pool") == ("src/db/pool.rs",)
    assert r.resolve("src/api/routes.rs", "rust", "crate::db::pool::Pool") == (
        "src/db/pool.rs",)
    assert r.resolve("src/api/routes.rs", "rust", "crate::Config") == ("src/lib.rs",)
    assert r.resolve("src/api/routes.rs", "rust", "super::super::db") == ("src/db.rs",)
    assert r.resolve("src/db/pool.rs", "rust", "super::Conn") == ("src/db.rs",)
    assert r.resolve("src/api/mod.rs", "rust", "self::routes::get") == ("src/api/routes.rs",)
    assert r.resolve("src/lib.rs", "rust", "std::io") == ()


def test_rust_paths_into_another_workspace_crate(tmp_path):
    r = tree(tmp_path, {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
        "crates/shop-core/Cargo.toml": '[package]\nname = "shop-core"\n',
        "crates/shop-core/src/lib.rs": "", "crates/shop-core/src/money.rs": "",
        "crates/cli/Cargo.toml": '[package]\nname = "cli"\n',
        "crates/cli/src/main.rs": "",
    })
    assert r.resolve("crates/cli/src/main.rs", "rust", "shop_core::money::Cents") == (
        "crates/shop-core/src/money.rs",)
    assert r.resolve("crates/cli/src/main.rs", "rust", "shop_core") == (
        "crates/shop-core/src/lib.rs",)


def test_java_classes_and_wildcards_resolve_under_any_source_root(tmp_path):
    r = tree(tmp_path, {
        "app/src/main/java/com/acme/cart/Cart.java": "",
        "app/src/main/java/com/acme/cart/Line.java": "",
        "app/src/main/java/com/acme/App.java": "",
    })
    assert r.resolve("app/src/main/java/com/acme/App.java", "java", "com.acme.cart.Cart") == (
        "app/src/main/java/com/acme/cart/Cart.java",)
    assert r.resolve("app/src/main/java/com/acme/App.java", "java", "com.acme.cart.*") == (
        "app/src/main/java/com/acme/cart/Cart.java", "app/src/main/java/com/acme/cart/Line.java")
    assert r.resolve("app/src/main/java/com/acme/App.java", "java",
                     "com.acme.cart.Cart.EMPTY") == ("app/src/main/java/com/acme/cart/Cart.java",)
    assert r.resolve("app/src/main/java/com/acme/App.java", "java", "java.util.List") == ()


def test_kotlin_imports_reach_kotlin_and_java_classes(tmp_path):
    r = tree(tmp_path, {
        "src/main/kotlin/com/acme/Main.kt": "",
        "src/main/kotlin/com/acme/model/User.kt": "",
        "src/main/java/com/acme/legacy/Dao.java": "",
    })
    assert r.resolve("src/main/kotlin/com/acme/Main.kt", "kotlin", "com.acme.model.User") == (
        "src/main/kotlin/com/acme/model/User.kt",)
    assert r.resolve("src/main/kotlin/com/acme/Main.kt", "kotlin", "com.acme.legacy.Dao") == (
        "src/main/java/com/acme/legacy/Dao.java",)


def test_csharp_using_resolves_to_the_files_of_the_namespace_folder(tmp_path):
    r = tree(tmp_path, {
        "src/Acme.Shop/Models/Order.cs": "", "src/Acme.Shop/Models/Line.cs": "",
        "src/Acme.Shop/Program.cs": "",
    })
    assert r.resolve("src/Acme.Shop/Program.cs", "csharp", "Acme.Shop.Models") == (
        "src/Acme.Shop/Models/Line.cs", "src/Acme.Shop/Models/Order.cs")
    assert r.resolve("src/Acme.Shop/Program.cs", "csharp", "System.Linq") == ()


def test_c_quoted_includes_search_the_importer_then_include_dirs_and_never_system(tmp_path):
    r = tree(tmp_path, {
        "src/main.c": "", "src/util.h": "",
        "include/shop/cart.h": "",
        "lib/vector": "",
    })
    assert r.resolve("src/main.c", "c", "util.h") == ("src/util.h",)
    assert r.resolve("src/main.c", "c", "shop/cart.h") == ("include/shop/cart.h",)
    assert r.resolve("src/main.c", "cpp", "<shop/cart.h>") == ("include/shop/cart.h",)
    assert r.resolve("src/main.c", "cpp", "<vector>") == ()
    assert r.resolve("src/main.c", "c", "<stdio.h>") == ()


def test_ruby_require_relative_and_lib_requires(tmp_path):
    r = tree(tmp_path, {
        "lib/shop.rb": "", "lib/shop/cart.rb": "", "app/models/order.rb": "",
        "app/models/concerns/priced.rb": "",
    })
    assert r.resolve("app/models/order.rb", "ruby", "./concerns/priced") == (
        "app/models/concerns/priced.rb",)
    assert r.resolve("app/models/concerns/priced.rb", "ruby", "../order") == (
        "app/models/order.rb",)
    assert r.resolve("app/models/order.rb", "ruby", "shop/cart") == ("lib/shop/cart.rb",)
    assert r.resolve("app/models/order.rb", "ruby", "json") == ()


def test_php_psr4_covers_autoload_dev_and_require_paths(tmp_path):
    r = tree(tmp_path, {
        "composer.json": '{"autoload": {"psr-4": {"App\\\\": "src/"}},'
                         ' "autoload-dev": {"psr-4": {"App\\\\Tests\\\\": ["tests/"]}}}',
        "src/Models/User.php": "", "tests/UserTest.php": "", "src/bootstrap.php": "",
        "src/config.php": "",
    })
    assert r.resolve("tests/UserTest.php", "php", "App\\Models\\User") == (
        "src/Models/User.php",)
    assert r.resolve("src/Models/User.php", "php", "App\\Tests\\UserTest") == (
        "tests/UserTest.php",)
    assert r.resolve("src/bootstrap.php", "php", "./config.php") == ("src/config.php",)
    assert r.resolve("src/bootstrap.php", "php", "Symfony\\Component\\Yaml") == ()


def test_dart_package_imports_of_this_package_map_to_lib(tmp_path):
    r = tree(tmp_path, {
        "pubspec.yaml": "name: shop_app\ndependencies:\n  http: ^1.0.0\n",
        "lib/src/cart.dart": "", "lib/main.dart": "", "lib/src/line.dart": "",
    })
    assert r.resolve("lib/main.dart", "dart", "package:shop_app/src/cart.dart") == (
        "lib/src/cart.dart",)
    assert r.resolve("lib/src/cart.dart", "dart", "line.dart") == ("lib/src/line.dart",)
    assert r.resolve("lib/main.dart", "dart", "package:http/http.dart") == ()
    assert r.resolve("lib/main.dart", "dart", "dart:async") == ()


def test_scss_imports_find_partials_and_index_files(tmp_path):
    r = tree(tmp_path, {
        "styles/main.scss": "", "styles/partials/_colors.scss": "",
        "styles/base/_index.scss": "", "styles/reset.css": "",
    })
    assert r.resolve("styles/main.scss", "scss", "partials/colors") == (
        "styles/partials/_colors.scss",)
    assert r.resolve("styles/main.scss", "scss", "base") == ("styles/base/_index.scss",)
    assert r.resolve("styles/main.scss", "css", "./reset.css") == ("styles/reset.css",)
    assert r.resolve("styles/main.scss", "scss", "sass:math") == ()


def test_shell_sources_resolve_next_to_the_script_then_from_the_root(tmp_path):
    r = tree(tmp_path, {
        "bin/deploy.sh": "", "bin/lib.sh": "", "lib/common.sh": "",
    })
    assert r.resolve("bin/deploy.sh", "shell", "./lib.sh") == ("bin/lib.sh",)
    assert r.resolve("bin/deploy.sh", "shell", "lib/common.sh") == ("lib/common.sh",)
    assert r.resolve("bin/deploy.sh", "shell", '$(dirname "$0")/lib.sh') == ("bin/lib.sh",)


def test_swift_modules_resolve_to_their_swiftpm_sources(tmp_path):
    r = tree(tmp_path, {
        "Sources/Shop/Cart.swift": "", "Sources/Shop/Line.swift": "",
        "Sources/App/main.swift": "",
    })
    assert r.resolve("Sources/App/main.swift", "swift", "Shop") == (
        "Sources/Shop/Cart.swift", "Sources/Shop/Line.swift")
    assert r.resolve("Sources/App/main.swift", "swift", "Foundation") == ()


def test_scala_wildcards_and_selector_groups(tmp_path):
    r = tree(tmp_path, {
        "src/main/scala/acme/shop/Cart.scala": "", "src/main/scala/acme/shop/Line.scala": "",
        "src/main/scala/acme/App.scala": "",
    })
    assert r.resolve("src/main/scala/acme/App.scala", "scala", "acme.shop._") == (
        "src/main/scala/acme/shop/Cart.scala", "src/main/scala/acme/shop/Line.scala")
    assert r.resolve("src/main/scala/acme/App.scala", "scala", "acme.shop.{Cart => C}") == (
        "src/main/scala/acme/shop/Cart.scala",)


def test_externals_resolve_to_nothing(tmp_path):
    r = tree(tmp_path, {
        "package.json": '{"name": "app"}', "a.ts": "", "a.py": "", "a.go": "", "a.rs": "",
        "go.mod": "module example.com/app\n",
    })
    for language, spec in [("typescript", "lodash"), ("typescript", "node:fs"),
                           ("typescript", "@scope/pkg/sub"), ("python", "requests"),
                           ("go", "golang.org/x/sync/errgroup"), ("rust", "serde::Serialize"),
                           ("c", "<stdlib.h>"), ("ruby", "rails"), ("swift", "UIKit")]:
        assert r.resolve("a.ts", language, spec) == (), (language, spec)


def test_escaping_the_root_and_odd_input_resolve_to_nothing(tmp_path):
    (tmp_path / "outside.ts").write_text("", encoding="utf-8")
    tree(tmp_path / "repo", {"src/a.ts": "", "src/a.py": ""})
    # Odd entries in the file list are dropped, never followed.
    r = Resolver(tmp_path / "repo", ["src/a.ts", "src/a.py", "/abs.py", "../up.py", "a\x00b.py"])
    assert r.resolve("src/a.ts", "typescript", "../../outside") == ()
    assert r.resolve("src/a.py", "python", "....up") == ()
    assert r.resolve("src/a.ts", "c", "../../outside.ts") == ()
    assert r.resolve("/etc/passwd", "python", "os") == ()
    assert r.resolve("src/a.py", "python", "a\x00b") == ()
    assert r.resolve("src/a.py", "klingon", "x") == ()
    assert r.resolve("src/a.ts", "typescript", "/etc/passwd") == ()


def test_malformed_and_hostile_configs_are_ignored(tmp_path):
    (tmp_path / "secret.json").write_text('{"compilerOptions": {"baseUrl": "."}}',
                                          encoding="utf-8")
    r = tree(tmp_path / "repo", {
        "tsconfig.json": '{"extends": "../secret.json", "compilerOptions": {"paths": 3}}',
        "web/tsconfig.json": '{"compilerOptions": {"baseUrl": ".", "paths": ',
        "package.json": '{"workspaces": 7}',
        "composer.json": '{"autoload": {"psr-4": {"App\\\\": 5}}}',
        "Cargo.toml": "[package\nname=",
        "go.mod": "", "pubspec.yaml": ":::",
        "src/a.ts": "", "src/b.ts": "", "src/a.php": "", "src/lib.rs": "", "web/a.ts": "",
        "web/b.ts": "",
    })
    assert r.resolve("src/a.ts", "typescript", "src/b") == ()
    assert r.resolve("src/a.ts", "typescript", "./b") == ("src/b.ts",)
    assert r.resolve("web/a.ts", "typescript", "b") == ()
    assert r.resolve("src/a.php", "php", "App\\X") == ()
    assert r.resolve("src/lib.rs", "rust", "crate::x") == ()
    assert r.resolve("src/a.ts", "go", "example.com/x") == ()


def test_a_config_symlinked_out_of_the_root_is_not_read(tmp_path):
    (tmp_path / "secret.json").write_text('{"compilerOptions": {"baseUrl": "."}}',
                                          encoding="utf-8")
    tree(tmp_path / "repo", {"src/a.ts": "", "src/b.ts": ""})
    (tmp_path / "repo" / "src" / "tsconfig.json").symlink_to(tmp_path / "secret.json")
    r = Resolver(tmp_path / "repo", ["src/a.ts", "src/b.ts", "src/tsconfig.json"])
    assert r.resolve("src/a.ts", "typescript", "b") == ()


def test_files_of_one_folder_share_answers_but_never_import_themselves(tmp_path):
    r = tree(tmp_path, {"inc/a.h": "", "inc/b.h": ""})
    assert r.resolve("inc/b.h", "c", "a.h") == ("inc/a.h",)
    assert r.resolve("inc/a.h", "c", "a.h") == ()


def test_a_jsonc_reader_keeps_comment_markers_inside_strings():
    assert loads_or_none('{"a": "http://x/*y*/", // c\n "b": [1, 2,],}') == {
        "a": "http://x/*y*/", "b": [1, 2]}
    assert loads_or_none('{"a": ') is None
    assert loads_or_none('\ufeff{"compilerOptions": {"baseUrl": "."}}') == {
        "compilerOptions": {"baseUrl": "."}}
    assert loads_or_none("// nothing but a comment\n") is None
    assert loads_or_none('{"a": 1 /* never closed') is None
    assert loads_or_none("[" * 10_000 + "]" * 10_000 + ",") is None  # too deep: no RecursionError


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])
@given(importer=st.text(max_size=30), language=st.sampled_from([
    "python", "typescript", "go", "rust", "java", "kotlin", "scala", "c", "csharp", "ruby",
    "php", "dart", "swift", "scss", "shell", "x"]), spec=st.text(max_size=40))
def test_resolve_never_raises_on_arbitrary_input(tmp_path, importer, language, spec):
    r = Resolver(tmp_path, ["a/b.py", "a/__init__.py", "src/lib.rs", "x.ts", importer])
    assert isinstance(r.resolve(importer, language, spec), tuple)
