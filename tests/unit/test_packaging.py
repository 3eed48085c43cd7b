from importlib.metadata import entry_points

from paste.deploy import loadwsgi


def test_paste_entry_points_resolve():
    eps = {ep.name: ep for ep in
           entry_points(group='paste.filter_factory')
           if ep.value.startswith('swift_mass.')}
    assert set(eps) == {'mass', 'mass_queue'}
    from swift_mass.obj import middleware as object_mw
    from swift_mass.proxy import middleware as proxy
    assert eps['mass'].load() is proxy.filter_factory
    assert eps['mass_queue'].load() is object_mw.filter_factory


def test_egg_uris_load_through_paste(tmp_path):
    conf = tmp_path / 'p.conf'
    conf.write_text(
        '[filter:mass]\nuse = egg:swift_mass#mass\ndefault_priority = 6\n'
        '[filter:mass_queue]\nuse = egg:swift_mass#mass_queue\n')
    for name in ('mass', 'mass_queue'):
        factory = loadwsgi.loadfilter('config:%s' % conf, name=name)
        assert callable(factory)


def test_the_installed_version_is_the_packages():
    # setup.cfg reads the version from the package: an installed
    # distribution that says another was built from another tree
    from importlib.metadata import version
    import swift_mass
    assert version('swift_mass') == swift_mass.__version__
