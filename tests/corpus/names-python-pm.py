# expect: 3:15 reserved
# options: --size N=8
def f(N: int, pm_x: 'double[N]'):
    for i in range(N):
        pm_x[i] = 1.0
