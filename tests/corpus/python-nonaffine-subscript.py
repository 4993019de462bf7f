# expect: 5:9 non-affine
# options: --size N=8
def f(N: int, A: 'double[N]'):
    for i in range(N):
        A[i * i] = 1.0
