# expect: 5:16 A[i - 2]
# options: --size N=8
def f(N: int, A: 'double[N]', B: 'double[N]'):
    for i in range(N):
        B[i] = A[i - 2]
