# expect: 1:1 exactly one function
# options: --size N=8
def f(N: int, A: 'double[N]'):
    for i in range(N):
        A[i] = 1.0


def g():
    pass
