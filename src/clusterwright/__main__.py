from clusterwright.cli.main import run

run()
