/* doitgen.c: PolyBench/C 4.2 linear-algebra/kernels/doitgen, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(NQ) && !defined(NR) && !defined(NP)
# ifdef MINI_DATASET
#  define NQ 8
#  define NR 10
#  define NP 12
# endif
# ifdef SMALL_DATASET
#  define NQ 20
#  define NR 25
#  define NP 30
# endif
# ifdef MEDIUM_DATASET
#  define NQ 40
#  define NR 50
#  define NP 60
# endif
#endif

#define _PB_NQ POLYBENCH_LOOP_BOUND(NQ,nq)
#define _PB_NR POLYBENCH_LOOP_BOUND(NR,nr)
#define _PB_NP POLYBENCH_LOOP_BOUND(NP,np)

#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%0.2lf "
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)
#define EXP_FUN(x) exp(x)
#define POW_FUN(x,y) pow(x,y)

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

static
void kernel_doitgen(int nr, int nq, int np,
                    DATA_TYPE POLYBENCH_3D(A,NR,NQ,NP,nr,nq,np),
                    DATA_TYPE POLYBENCH_2D(C4,NP,NP,np,np),
                    DATA_TYPE POLYBENCH_1D(sum,NP,np))
{
  int r, q, p, s;

#pragma scop
  for (r = 0; r < _PB_NR; r++)
    for (q = 0; q < _PB_NQ; q++)  {
      for (p = 0; p < _PB_NP; p++)  {
        sum[p] = SCALAR_VAL(0.0);
        for (s = 0; s < _PB_NP; s++)
          sum[p] += A[r][q][s] * C4[s][p];
      }
      for (p = 0; p < _PB_NP; p++)
        A[r][q][p] = sum[p];
    }
#pragma endscop

}
